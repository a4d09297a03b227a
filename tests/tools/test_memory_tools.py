"""The memory tools through the toolset guard, as the loop calls them."""

import json
from pathlib import Path

from contextengine.memory.working_memory import FINDINGS, WorkingMemory
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.memory import with_memory_tools
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

TOOLSET = with_memory_tools(default_toolset())


def run(ctx: ToolContext, name: str, **arguments):
    return TOOLSET.execute(ToolCall("c1", name, json.dumps(arguments)), ctx)


def test_memory_tools_join_the_default_tools() -> None:
    assert set(TOOLSET.names) == set(default_toolset().names) | {
        "memory_finding_add",
        "memory_plan_update",
    }
    schema = {s.name: s.parameters for s in TOOLSET.specs()}["memory_plan_update"]
    assert "$defs" not in json.dumps(schema)
    assert set(schema["properties"]) == {"goal", "blockers", "add_decisions"}


def test_plan_update_and_finding_write_the_files(tmp_path: Path) -> None:
    memory = WorkingMemory(tmp_path / "session")
    ctx = ToolContext(Workspace(tmp_path), memory=memory)
    memory.apply_todos([("Write greet.py", "in_progress"), ("Run it", "pending")])
    out = run(
        ctx,
        "memory_plan_update",
        goal="Greet the world",
        blockers="no python yet",
        add_decisions=["plain print, no library"],
    )
    assert out.status == "success"
    assert (
        out.text == "Plan updated: 2 steps (1 pending, 1 in_progress). Now: Step 1 - Write greet.py"
    )
    plan = (tmp_path / "session" / "task_plan.md").read_text()
    for text in ("Greet the world", "no python yet", "plain print, no library", "[>] Write greet"):
        assert text in plan
    steps = run(ctx, "memory_plan_update", phases=[{"name": "Build", "steps": []}])
    assert steps.error is not None and steps.error.code == "invalid_arguments"
    out = run(
        ctx, "memory_finding_add", title="Python", content="3.11 is installed", source="python -V"
    )
    assert out.status == "success"
    assert "3.11 is installed" in (tmp_path / "session" / FINDINGS).read_text()


def test_bad_plan_updates_are_error_observations(tmp_path: Path) -> None:
    ctx = ToolContext(Workspace(tmp_path), memory=WorkingMemory(None))
    empty = run(ctx, "memory_plan_update")
    assert empty.error is not None and empty.error.code == "invalid_arguments"
    off = run(ToolContext(Workspace(tmp_path)), "memory_finding_add", title="t", content="c")
    assert off.status == "error" and "working memory is off" in off.text
