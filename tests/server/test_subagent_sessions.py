"""R16.1 over HTTP: a sub-agent's session is listed with the session that delegated it,
and the parent's usage names it."""

from __future__ import annotations

from pathlib import Path

from contextengine import Config

from .live import LiveServer, post_turn, scripted_app

SCRIPT = [
    {
        "content": "Delegating.",
        "tool_calls": [{"name": "agent_delegate", "arguments": {"task": "Count the files."}}],
    },
    {"content": "There are no files in the workspace."},
    {"content": "The sub-agent found no files."},
]


def test_the_session_list_names_each_sessions_parent(workspace: Path) -> None:
    config = Config(subagents=True, sandbox=False)
    with LiveServer(scripted_app(workspace, SCRIPT, config)) as server, server.client() as http:
        parent = http.post("/api/sessions").json()["id"]
        events = post_turn(http, parent, "How many files are there?")
        assert events[-1].data["result"]["status"] == "completed"
        listed = {s["id"]: s for s in http.get("/api/sessions").json()["sessions"]}
        (child,) = [sid for sid in listed if sid != parent]
        assert listed[parent]["parent"] is None
        assert listed[child]["parent"] == parent
        assert listed[child]["title"] == "Count the files."
        assert http.get(f"/api/sessions/{child}").json()["parent"] == parent
        (listed_child,) = http.get(f"/api/sessions/{parent}/usage").json()["sub_agents"]
        assert listed_child["session"] == child and listed_child["calls"] == 1
