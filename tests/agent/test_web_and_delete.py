"""Through the real loop: a fetched page becomes a recoverable webpage ref; a deleted file
lands in the session trash, readable, and the deletion is listed in progress.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contextengine import CompressedRef, Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.entries import ToolResultEntry
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall
from support.websites import running_site

pytest.importorskip("trafilatura", reason="web_fetch needs the 'web' extra")


def refs_in(messages: object) -> list[CompressedRef]:
    """Every compressed_ref line in the messages' text."""
    found = []
    for line in _strings(messages):
        for piece in line.split("\n"):
            if piece.startswith('{"_type":"compressed_ref"'):
                found.append(CompressedRef.from_json(piece))
    return found


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def call(name: str, **arguments: object) -> dict:
    return {"name": name, "arguments": arguments}


def results(agent: Agent) -> list[ToolResultEntry]:
    return [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]


@pytest.mark.parametrize("history_mode", ["full", "compressed"])
def test_fetched_page_is_a_webpage_ref_recoverable_byte_for_byte(
    tmp_path: Path, history_mode: str
) -> None:
    with running_site() as site:
        url = f"{site.base}/article.html"
        script = [
            {"content": "Reading.", "tool_calls": [call("web_fetch", url=url)]},
            {"content": "The page is about keeping the KV cache warm."},
        ]
        config = Config(web_allow_private=True, history_mode=history_mode)
        provider = ScriptedProvider(script)
        agent = Agent(provider, tmp_path / "ws", config)
        assert agent.run("Summarize the page.").status == "completed"
        direct = default_toolset().execute(
            ToolCall("d", "web_fetch", json.dumps({"url": url})), agent.tool_context
        )
    (result,) = results(agent)
    assert result.tool_name == "web_fetch" and result.status == "success"
    assert len(direct.text) > 2000 and result.original_length == len(direct.text)
    # What the model saw right after the call: the ref, naming the URL and the saved copy.
    (ref,) = refs_in(provider.requests[-1].messages)
    assert (ref.type, ref.url, ref.recoverable) == ("webpage", url, True)
    assert (
        ref.path is not None and "/artifacts/" in ref.path and ref.path.endswith("-web_fetch.txt")
    )
    assert agent.recover(ref) == direct.text


def test_delete_is_high_risk_recoverable_and_logged(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "old.txt").write_text("old content\n")
    script = [
        {"content": "Deleting.", "tool_calls": [call("file_delete", path="old.txt")]},
        {"content": "Checking the trash.", "tool_calls": [call("file_read", path="PLACEHOLDER")]},
        {"content": "Deleted old.txt; a copy is in the trash."},
    ]
    provider = ScriptedProvider(script)
    agent = Agent(provider, workspace, Config())
    kept = agent.tool_context.workspace.display(agent.session_dir / "trash" / "1" / "old.txt")
    script[1]["tool_calls"][0]["arguments"]["path"] = kept
    assert agent.run("Delete old.txt").status == "completed"
    assert not (workspace / "old.txt").exists()
    deleted, read = results(agent)
    assert deleted.status == "success" and kept in deleted.content
    assert read.status == "success" and "old content" in read.content
    progress = (agent.session_dir / "progress.md").read_text(encoding="utf-8")
    assert "Tool Call: file_delete" in progress and f"kept at {kept}" in progress
