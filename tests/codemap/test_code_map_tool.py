"""``code_map`` (R17.1): the tool, the note through the real loop, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.codemap import CodeMap
from contextengine.session.entries import NoteEntry, ToolResultEntry
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.code_map import CodeMapTool, with_code_map
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.types import ToolCall

pytest.importorskip("tree_sitter_python", reason="the code map needs the 'codemap' extra")


def run_tool(ctx: ToolContext, **arguments: object):
    call = ToolCall("c1", "code_map", json.dumps(arguments))
    return Toolset([CodeMapTool()]).execute(call, ctx)


def context(root: Path) -> ToolContext:
    workspace = Workspace(root)
    return ToolContext(workspace, code_map=CodeMap(workspace, 1024))


def test_focus_on_a_file_or_a_name_centres_the_map(code_ws: Path) -> None:
    ctx = context(code_ws)
    outcome = run_tool(ctx, focus=["./web/app.js", "total_cents"], max_tokens=80)
    assert outcome.status == "success" and outcome.kind == "file"
    assert outcome.data["focus_files"] == ["web/app.js"]
    assert outcome.data["focus_names"] == ["total_cents"]
    assert outcome.data["tokens"] <= 80
    head, body = outcome.text.split("\n", 1)
    assert "focus: web/app.js, total_cents" in head
    assert body.startswith("web/cart.js:") or "\nweb/cart.js:" in body


def test_without_focus_the_map_centres_on_the_files_the_session_read(code_ws: Path) -> None:
    ctx = context(code_ws)
    ctx.read_mtimes[str(code_ws / "shop" / "checkout.py")] = 1
    outcome = run_tool(ctx, max_tokens=64)
    assert outcome.data["focus_files"] == ["shop/checkout.py"]
    assert outcome.text.split("\n", 2)[1] == "shop/models.py:"


def test_the_tool_reports_a_map_that_is_off_and_refuses_bad_budgets(code_ws: Path) -> None:
    off = Toolset([CodeMapTool()]).execute(
        ToolCall("c1", "code_map", "{}"), ToolContext(Workspace(code_ws))
    )
    assert off.error is not None and off.error.code == "unavailable"
    assert "setting code_map" in off.error.message
    tiny = run_tool(context(code_ws), max_tokens=1)
    assert tiny.error is not None and tiny.error.code == "invalid_arguments"


def test_with_code_map_adds_the_tool_to_a_toolset() -> None:
    names = with_code_map(default_toolset()).names
    assert "code_map" in names and set(default_toolset().names) < set(names)


@pytest.mark.parametrize("history_mode", ["full", "compressed"])
def test_the_agent_injects_the_map_once_and_again_only_after_an_edit(
    code_ws: Path, history_mode: str
) -> None:
    edit = {
        "name": "file_edit",
        "arguments": {
            "path": "shop/legacy.py",
            "old_text": "unused_helper",
            "new_text": "old_helper",
        },
    }
    script = [
        {
            "content": "Mapping.",
            "tool_calls": [{"name": "code_map", "arguments": {"focus": ["Cart"]}}],
        },
        {"content": "The cart lives in shop/models.py."},
        {"content": "Still the same code, nothing to add."},
        {"content": "Renaming.", "tool_calls": [edit]},
        {"content": "Renamed unused_helper to old_helper."},
        {"content": "The map now shows old_helper."},
    ]
    provider = ScriptedProvider(script)
    agent = Agent(
        provider, code_ws, Config(code_map=True, code_map_tokens=512, history_mode=history_mode)
    )
    for message in ("Where is the cart?", "And now?", "Rename unused_helper.", "Map again?"):
        agent.run(message)
    notes = [r.entry for r in agent.session.records if isinstance(r.entry, NoteEntry)]
    maps = [n.text for n in notes if n.source == "code_map"]
    assert len(maps) == 2, "turn 2 and 3 saw unchanged files; turn 4 saw the edit"
    assert "unused_helper" in maps[0] and "old_helper" in maps[1]
    requests = [r for r in provider.requests if r.purpose == "main"]
    assert all(r.tools == requests[0].tools for r in requests)
    assert "code_map" in [t["function"]["name"] for t in requests[0].tools]
    assert "Code map of the workspace" not in requests[0].messages[0]["content"]
    result = next(r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry))
    assert "shop/models.py:" in result.content and "class Cart:" in result.content
    assert agent.stats()["cache_breaks"] == {}


def test_the_code_map_is_off_by_default(code_ws: Path) -> None:
    agent = Agent(ScriptedProvider([{"content": "Nothing to map today."}]), code_ws, Config())
    assert "code_map" not in agent.toolset.names and agent.tool_context.code_map is None


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTENGINE_")}
    return subprocess.run(
        [sys.executable, "-m", "contextengine.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_cli_prints_the_map_and_refuses_a_missing_folder(code_ws: Path) -> None:
    shown = run_cli("codemap", str(code_ws), "--tokens", "64", "--focus", "shop/checkout.py")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("shop/models.py:\n")
    assert "definitions in" in shown.stderr and "tokens" in shown.stderr
    missing = run_cli("codemap", str(code_ws / "nope"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"contextengine: error: {code_ws / 'nope'}: not a folder"


def test_the_tool_declares_itself_a_read_so_the_2_action_rule_counts_it() -> None:
    traits = with_code_map(default_toolset()).traits("code_map")
    assert (traits.category, traits.risk) == ("read", "low")
