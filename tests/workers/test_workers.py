"""Turns on workers end to end: a replica queues, a worker runs, the replica streams."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.postgres import Postgres
from support.redis import Redis

from .cluster import TURN_SCRIPT, Cluster, post_turn, sleeping_script


@pytest.fixture
def cluster(postgres: Postgres, redis: Redis, tmp_path: Path) -> Iterator[Cluster]:
    """An empty database, the broker, and nothing started yet."""
    store = postgres.new_database(f"workers_{tmp_path.name[-40:]}".replace("-", "_").lower())
    with Cluster(tmp_path, store, redis.database(2)) as started:
        yield started


def test_a_worker_runs_the_turns_a_replica_queues_and_the_replica_streams_them(
    cluster: Cluster,
) -> None:
    cluster.worker("worker-1")
    replica = cluster.replica("replica-1")
    with replica.client() as client:
        sessions = [client.post("/api/sessions").json()["id"] for _ in range(3)]
        for turn in range(2):
            for session in sessions:
                events = post_turn(client, session, f"turn {turn} of {session}")
                names = [e.event for e in events]
                assert "tool_call" in names and "tool_result" in names, names
                assert names[-1] == "done"
                assert events[-1].data["result"]["status"] == "completed"
                assert events[-1].data["result"]["final_answer"] == TURN_SCRIPT[-1]["content"]
                ids = [e.id for e in events]
                assert ids == sorted(ids) and len(set(ids)) == len(ids)
        for session in sessions:
            entries = client.get(f"/api/sessions/{session}/history").json()["entries"]
            kinds = [e["kind"] for e in entries]
            assert kinds.count("user") == 2
            replay = client.get(f"/api/sessions/{session}/events").text
            assert replay.count("event: done") == 2


def test_the_web_ui_sees_and_stops_the_turn_a_worker_runs(cluster: Cluster) -> None:
    cluster.worker("worker-1", script=sleeping_script(2))
    replica = cluster.replica("replica-1")
    with replica.client() as client, replica.client() as ui:
        session = client.post("/api/sessions").json()["id"]
        assert ui.post(f"/api/sessions/{session}/cancel").status_code == 409
        seen: list[dict[str, Any]] = []
        answers: list[int] = []

        def look_then_stop_once_the_command_runs(line: str) -> None:
            if line == "event: tool_call" and not answers:
                listed = ui.get("/api/sessions").json()["sessions"]
                seen.extend(s for s in listed if s["id"] == session)
                seen.append(ui.get(f"/api/sessions/{session}").json())
                answers.append(ui.delete(f"/api/sessions/{session}").status_code)
                stop = ui.post(f"/api/sessions/{session}/cancel")
                answers.append(stop.status_code)
                seen.append({"busy": True, "turn": stop.json()["turn"]})

        events = post_turn(client, session, "Wait, please.", look_then_stop_once_the_command_runs)
        assert answers == [409, 202], "no delete while a worker runs the turn; stop it"
        turn = {"first_event_id": events[0].id, "entry_index": 0, "message": "Wait, please."}
        assert [(s["busy"], s["turn"]) for s in seen] == [(True, turn)] * 3
        assert [e.event for e in events].count("tool_result") == 1
        assert events[-1].event == "done"
        assert events[-1].data["result"]["status"] == "cancelled"
        assert ui.post(f"/api/sessions/{session}/cancel").status_code == 409
        after = ui.get(f"/api/sessions/{session}").json()
        assert (after["busy"], after["turn"]) == (False, None)
