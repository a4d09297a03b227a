"""With the session root anywhere inside the workspace, no tool reaches another session.

Session A and session B share a root inside the workspace (``<ws>/sessions``, or a deeper
folder, or the workspace itself). Session B's file tools and sandboxed shell try to list,
read, search and overwrite A's log and the long-term memory database; nothing of A's must
appear in any result and nothing of A's or of the memory may change.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.memory.scope import MEMORY_DB, SessionScope
from contextengine.toolkit.base import ToolOutcome
from contextengine.types import ToolCall

SECRET = "SESSION-A-SECRET-51c2"

pytestmark = pytest.mark.timeout(60)


def agents(tmp_path: Path, root: str) -> tuple[Agent, Agent, Path]:
    """Two sessions under one root inside the workspace; A holds a secret, and the memory."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    config = Config(root=str(workspace / root) if root else str(workspace))
    first = Agent(ScriptedProvider([]), workspace, config)
    first.session.layout.log.open("a").write(json.dumps({"note": SECRET}) + "\n")
    (first.session.directory / "task_plan.md").write_text(f"plan {SECRET}\n")
    memory = SessionScope.of(first.session.directory).database
    with contextlib.closing(sqlite3.connect(memory)) as db, db:
        db.execute("CREATE TABLE planted (note TEXT)")
        db.execute("INSERT INTO planted VALUES (?)", (SECRET,))
    second = Agent(ScriptedProvider([]), workspace, config)
    return first, second, memory


def call(agent: Agent, name: str, **arguments: Any) -> ToolOutcome:
    return agent.toolset.execute(ToolCall("c1", name, json.dumps(arguments)), agent.tool_context)


def snapshot(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for folder in paths for p in sorted(folder.rglob("*")) if p.is_file()}


ROOTS = ["sessions", "data/deep/sessions", ""]


@pytest.mark.parametrize("root", ROOTS)
def test_file_tools_do_not_reach_another_session_or_the_memory(tmp_path: Path, root: str) -> None:
    first, second, memory = agents(tmp_path, root)
    ws = second.workspace
    before = snapshot(first.session.directory) | {memory: memory.read_bytes()}
    a_log = first.session.layout.log
    a_plan = first.session.directory / "task_plan.md"
    outs = [
        call(second, "file_ls", path=str(a_log.parent.relative_to(ws))),
        call(second, "file_read", path=str(a_log)),
        call(second, "file_read", path=str(a_log.relative_to(ws))),
        call(second, "file_read", path=str(memory.relative_to(ws))),
        call(second, "file_glob", pattern="**"),
        call(second, "file_glob", pattern="**/*.jsonl"),
        call(second, "file_grep", pattern=SECRET[:-4]),
        call(second, "file_grep", pattern="SECRET", path=str(a_log.parent.relative_to(ws))),
        call(second, "file_write", path=str(a_plan.relative_to(ws)), content="pwned"),
        call(second, "file_write", path=str(memory.relative_to(ws)), content="pwned"),
        call(second, "file_edit", path=str(a_plan), old_text="plan", new_text="pwned"),
        call(second, "file_delete", path=str(a_log.relative_to(ws))),
    ]
    if root:
        outs.append(call(second, "file_ls", path=root))
    for out in outs:
        assert SECRET not in out.text, out.text
        assert a_log.name not in out.text or out.status == "error", out.text
    assert snapshot(first.session.directory) | {memory: memory.read_bytes()} == before


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.parametrize("root", ROOTS)
def test_the_sandbox_does_not_reach_another_session_or_the_memory(
    tmp_path: Path, root: str
) -> None:
    first, second, memory = agents(tmp_path, root)
    before = snapshot(first.session.directory) | {memory: memory.read_bytes()}
    command = (
        f"grep -r {SECRET[:-4]} . ; cat {first.session.layout.log} {memory}; "
        f"echo pwned > {memory}; echo pwned >> {first.session.layout.log}; "
        f"rm -rf {first.session.directory}; find . -name '*.jsonl'"
    )
    out = call(second, "shell_exec", command=command)
    assert SECRET not in out.text
    assert first.session.layout.log.name not in out.data["stdout"]
    assert snapshot(first.session.directory) | {memory: memory.read_bytes()} == before


def test_a_root_outside_the_workspace_keeps_its_memory_out_of_reach(tmp_path: Path) -> None:
    scope = SessionScope(tmp_path / "elsewhere", "o", "t", "w", "s")
    assert scope.private_to(tmp_path / "ws") == (tmp_path / "elsewhere",)
    inside = SessionScope(tmp_path / "ws", "o", "t", "w", "s")
    assert inside.private_to(tmp_path / "ws") == (
        tmp_path / "ws" / "o",
        tmp_path / "ws" / MEMORY_DB,
    )
