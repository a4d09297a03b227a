"""The issue's multi-process test: 2 replicas, 2 workers, 50 concurrent sessions, one
worker SIGKILLed mid-run; every session completes, nothing is lost or duplicated."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from server.live import Sse, parse_sse
from support.postgres import Postgres
from support.redis import Redis

from .cluster import Cluster, Replica, post_turn, sleeping_script

SESSIONS = 50
TURNS = 2


@pytest.fixture
def cluster(postgres: Postgres, redis: Redis, tmp_path: Path) -> Iterator[Cluster]:
    """An empty database, the broker, and nothing started yet."""
    with Cluster(tmp_path, postgres.new_database("workers_killed"), redis.database(3)) as started:
        yield started


# The doomed worker's tool calls sleep long (they are in it when it is killed) and are
# told apart by their command in the tool_call events; the other worker's are quick.
DOOMED_SLEEP_S = 60
DOOMED_COMMAND = f"sleep {DOOMED_SLEEP_S}"


def _drive(replica: Replica, session: str, in_doomed_tool: threading.Event) -> list[list[Sse]]:
    """The session's turns, one after the other; each turn's SSE stream."""

    last_event = ""

    def watch(line: str) -> None:
        # The tool_call event is sent once the call is recorded, right before it runs.
        nonlocal last_event
        if line.startswith("event:"):
            last_event = line.removeprefix("event:").strip()
        elif last_event == "tool_call" and line.startswith("data:") and DOOMED_COMMAND in line:
            in_doomed_tool.set()

    with replica.client() as client:
        return [post_turn(client, session, f"turn {n} of {session}", watch) for n in range(TURNS)]


@pytest.mark.slow
@pytest.mark.timeout(600)  # 50 sessions through 2 workers: about 3 minutes on 2 busy cores
def test_a_worker_killed_mid_run_loses_and_repeats_nothing(cluster: Cluster) -> None:
    doomed = cluster.worker("worker-1", script=sleeping_script(DOOMED_SLEEP_S))
    cluster.worker("worker-2", script=sleeping_script(0.2), redelivery_s=5)
    replicas = [cluster.replica("replica-1"), cluster.replica("replica-2")]
    with replicas[0].client() as client:
        sessions = [client.post("/api/sessions").json()["id"] for _ in range(SESSIONS)]

    in_doomed_tool = threading.Event()
    with ThreadPoolExecutor(SESSIONS) as pool:
        runs = [
            pool.submit(_drive, replicas[n % 2], s, in_doomed_tool) for n, s in enumerate(sessions)
        ]
        assert in_doomed_tool.wait(timeout=60), "worker-1 ran no tool call"
        doomed.kill()
        streams = {s: run.result(timeout=100) for s, run in zip(sessions, runs)}

    interrupted = 0
    with replicas[1].client() as client:
        for session, turns in streams.items():
            for turn in turns:
                ids = [e.id for e in turn]
                assert ids == list(range(ids[0], ids[0] + len(ids))), (session, ids)
                assert turn[-1].event == "done"
                assert turn[-1].data["result"]["status"] == "completed", turn[-1].data
            every = client.get(f"/api/sessions/{session}/events").text
            seen = [e for turn in turns for e in turn]
            assert [(e.id, e.event) for e in parse_sse(every.splitlines())] == [
                (e.id, e.event) for e in seen
            ]
            entries = client.get(f"/api/sessions/{session}/history").json()["entries"]
            interrupted += _check_record(session, entries)
    assert interrupted >= 1, "the kill landed in no tool call"


def _check_record(session: str, entries: list[dict[str, Any]]) -> int:
    """One user entry per turn, in order; every tool call answered exactly once; each turn
    ends with an answer. How many results say the call was interrupted."""
    users = [e["text"] for e in entries if e["kind"] == "user"]
    assert users == [f"turn {n} of {session}" for n in range(TURNS)], users
    calls = [c["id"] for e in entries if e["kind"] == "assistant" for c in e["tool_calls"]]
    results = Counter(e["call_id"] for e in entries if e["kind"] == "tool_result")
    assert len(set(calls)) == len(calls)
    assert results == Counter(calls), (calls, results)
    ends = [n - 1 for n, e in enumerate(entries) if e["kind"] == "user"][1:]
    ends.append(len(entries) - 1)
    for end in ends:
        assert entries[end]["kind"] == "assistant" and not entries[end]["tool_calls"]
    return sum(1 for e in entries if e["kind"] == "tool_result" and "interrupted" in e["content"])
