"""``memory_git``: the session's three memory files are committed to a real git repository
in the session folder once per turn that changed them; without git, a one-line error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.errors import ConfigError
from contextengine.memory.versions import MemoryRepo
from contextengine.memory.working_memory import MEMORY_FILES

GIT = Config(memory_git=True, sandbox=False)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, check=True
    ).stdout


def plan_call(step: str) -> dict:
    todos = [{"content": step, "status": "in_progress"}]
    return {
        "content": "Planning.",
        "tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}],
    }


def test_each_turn_commits_the_memory_files_naming_the_turn(tmp_path: Path) -> None:
    script = [
        plan_call("Read the notes"),
        {"content": "I planned the first step."},
        {"content": "Nothing more to plan, all good."},
    ]
    with Agent(ScriptedProvider(script), tmp_path / "ws", GIT) as agent:
        agent.run("Plan the cache notes.\nMore detail on a second line.")
        folder = agent.session_dir
        first = git(folder, "rev-parse", "HEAD").strip()
        agent.run("Anything else?")
    subjects = git(folder, "log", "--format=%s").splitlines()
    assert subjects == ["turn 2: Anything else?", "turn 1: Plan the cache notes."]
    assert sorted(git(folder, "ls-files").split()) == sorted(MEMORY_FILES)
    assert "Read the notes" in git(folder, "show", f"{first}:task_plan.md")
    for name in MEMORY_FILES:  # the last commit holds the files as the turn left them
        assert git(folder, "show", f"HEAD:{name}") == (folder / name).read_text()
    assert "status: completed" in git(folder, "log", "-1", "--format=%b")


def test_no_change_makes_no_commit(tmp_path: Path) -> None:
    (tmp_path / "task_plan.md").write_text("plan\n")
    repo = MemoryRepo.open(tmp_path)
    assert repo.commit("turn 1: first") is not None
    assert repo.commit("turn 2: nothing changed") is None
    (tmp_path / "findings.md").write_text("a finding\n")
    assert repo.commit("turn 3: a finding") is not None
    assert git(tmp_path, "log", "--format=%s").splitlines() == [
        "turn 3: a finding",
        "turn 1: first",
    ]


def test_off_by_default(tmp_path: Path) -> None:
    with Agent(ScriptedProvider([{"content": "Hello there, all done."}]), tmp_path / "ws") as agent:
        agent.run("hi")
    assert not (agent.session_dir / ".git").exists()


def test_without_git_the_agent_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="memory_git is on but git was not found"):
        Agent(ScriptedProvider([]), tmp_path / "ws", GIT)


def test_without_git_the_cli_says_so_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEXTENGINE_", "OPENAI_"))}
    env |= {
        "PATH": str(tmp_path / "empty"),
        "CONTEXTENGINE_MEMORY_GIT": "true",
        "OPENAI_API_KEY": "unused",
    }
    done = subprocess.run(
        [sys.executable, "-m", "contextengine.cli", "run", "hi", "-p", "openai", "-m", "m",
         "--base-url", "http://127.0.0.1:9/v1", "-w", str(tmp_path / "ws")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        == "contextengine: error: memory_git is on but git was not found on PATH (install git)"
    )
