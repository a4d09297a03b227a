"""The inspector API: recorded requests, one request with its diff, the timeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contextengine.measure.report import load_usage, usage_report
from server.live import LiveServer, scripted_app
from support.inspected_session import record_session


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    workspace = tmp_path_factory.mktemp("api") / "ws"
    session_dir, sent = record_session(workspace)
    return workspace, session_dir, sent


def test_inspect_endpoints_match_the_cli_and_the_report(recorded) -> None:
    workspace, session_dir, sent = recorded
    cli = subprocess.run(
        [sys.executable, "-m", "contextengine.cli", "inspect", str(session_dir), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    with LiveServer(scripted_app(workspace)) as server, server.client() as client:
        sid = session_dir.name
        calls = client.get(f"/api/sessions/{sid}/inspect").json()["calls"]
        assert calls == json.loads(cli.stdout)
        broken = next(c for c in calls if c["break"])
        one = client.get(f"/api/sessions/{sid}/inspect/{broken['call']}").json()
        assert one["text"] == sent[broken["call"] - 1].text()
        assert one["diff"]["previous"] == broken["call"] - 1
        assert one["diff"]["position"] == broken["break"]["position"]
        first = client.get(f"/api/sessions/{sid}/inspect/1").json()
        assert first["diff"] is None
        timeline = client.get(f"/api/sessions/{sid}/inspect/timeline").json()
        report = usage_report(session_dir, load_usage(session_dir)).as_dict()
        assert timeline["totals"] == json.loads(json.dumps(report))
        assert len(timeline["calls"]) == len(sent)
        events = [e for c in timeline["calls"] for e in c["events"]]
        assert "break: l2_changed" in events and "compaction" in events
        missing = client.get(f"/api/sessions/{sid}/inspect/{len(sent) + 1}")
        assert missing.status_code == 404 and "no call" in missing.json()["error"]
        assert (
            client.get(f"/api/sessions/{sid}/inspect", headers={"Authorization": ""}).status_code
            == 401
        )


def test_a_session_without_calls_inspects_as_empty(tmp_path: Path) -> None:
    with LiveServer(scripted_app(tmp_path)) as server, server.client() as client:
        sid = client.post("/api/sessions").json()["id"]
        assert client.get(f"/api/sessions/{sid}/inspect").json() == {"calls": []}
        assert client.get(f"/api/sessions/{sid}/inspect/timeline").json()["calls"] == []
