"""The scale tier outlives its own services: PostgreSQL, then Redis, restarted mid-turn under
2 workers and a replica. The replica answers again, every worker keeps running, every turn
ends (completed, or failed with a clear error and then retried) and nothing is lost or
recorded twice."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
import redis as redis_client

from contextengine.workers.engine import QUEUE
from server.live import Sse, parse_sse
from support.postgres import Postgres
from support.redis import Redis

from .cluster import Cluster, Process, Replica, sleeping_script

SRC = Path(__file__).resolve().parents[2] / "src"

SESSIONS = 4
TURNS = 2
ANSWER_AGAIN_S = 10.0  # the replica answers this soon after its database is back
TURN_DEADLINE_S = 90.0


@pytest.fixture
def cluster(postgres: Postgres, redis: Redis, tmp_path: Path) -> Iterator[Cluster]:
    """An empty database, the broker, and nothing started yet."""
    store = postgres.new_database(f"restart_{tmp_path.name[-30:]}".replace("-", "_").lower())
    with Cluster(tmp_path, store, redis.database(4)) as started:
        yield started


def _read(response: httpx.Response, seen: list[Sse], on_line: Callable[[str], None]) -> None:
    """Add the stream's events to ``seen`` as they arrive (until it ends or breaks)."""
    lines: list[str] = []
    try:
        for line in response.iter_lines():
            on_line(line)
            lines.append(line)
            if not line:
                seen.extend(parse_sse(lines))
                lines.clear()
    except httpx.HTTPError:
        pass  # a replica that lost its database ends the stream; the caller reconnects


def _turn(
    client: httpx.Client, session: str, message: str, on_line: Callable[[str], None]
) -> list[Sse]:
    """Send ``message`` and follow its turn to ``done`` as a browser would: a failed send is
    sent again, a broken stream continues after the last event id it delivered."""
    deadline = time.monotonic() + TURN_DEADLINE_S
    seen: list[Sse] = []
    sent = False
    while time.monotonic() < deadline:
        try:
            if not sent:
                with client.stream(
                    "POST", f"/api/sessions/{session}/messages", json={"message": message}
                ) as response:
                    if response.status_code != 200:
                        response.read()
                        time.sleep(0.5)
                        continue
                    sent = True
                    _read(response, seen, on_line)
            else:
                after = seen[-1].id if seen else 0
                with client.stream(
                    "GET", f"/api/sessions/{session}/events", params={"last_event_id": after}
                ) as response:
                    if response.status_code == 200:
                        _read(response, seen, on_line)
                    else:
                        response.read()
                        time.sleep(0.5)
        except httpx.HTTPError:
            time.sleep(0.5)
        if seen and seen[-1].event == "done":
            return seen
    raise AssertionError(f"turn {message!r} did not end: {[e.event for e in seen]}")


def _drive(replica: Replica, session: str, in_tool: threading.Event) -> list[tuple[str, Sse]]:
    """The session's turns; a failed one is sent again. Each send's message and ``done``."""

    def watch(line: str) -> None:
        if line == "event: tool_call":
            in_tool.set()

    ends: list[tuple[str, Sse]] = []
    with replica.client() as client:
        for n in range(TURNS):
            message = f"turn {n} of {session}"
            while True:
                events = _turn(client, session, message, watch)
                ids = [e.id for e in events]
                assert ids == sorted(set(ids)), (session, ids)
                ends.append((message, events[-1]))
                if events[-1].data["result"]["status"] == "completed":
                    break
                assert len(ends) < 4 * TURNS, ends
    return ends


def _restart_mid_turn(cluster: Cluster, restart: Callable[[], None]) -> None:
    workers = [
        cluster.worker(f"worker-{n}", concurrency=2, script=sleeping_script(3)) for n in (1, 2)
    ]
    replica = cluster.replica("replica-1")
    with replica.client() as client:
        sessions = [client.post("/api/sessions").json()["id"] for _ in range(SESSIONS)]
    in_tool = threading.Event()
    with ThreadPoolExecutor(SESSIONS) as pool:
        runs = [pool.submit(_drive, replica, s, in_tool) for s in sessions]
        assert in_tool.wait(timeout=60), "no turn reached its tool call"
        restart()
        back = time.monotonic()
        with replica.client() as client:
            while client.get("/api/sessions").status_code != 200:
                assert time.monotonic() - back < ANSWER_AGAIN_S, "the replica does not answer"
                time.sleep(0.2)
        sends = {s: run.result(timeout=TURN_DEADLINE_S * 3) for s, run in zip(sessions, runs)}

    for worker in workers:
        assert worker.process.poll() is None, worker.log.read_text()[-3000:]
    with replica.client() as client:
        for session, ends in sends.items():
            for _, done in ends:
                status = done.data["result"]["status"]
                assert status in {"completed", "error"}, done.data
                if status == "error":
                    assert done.data["result"]["error"], done.data
            entries = client.get(f"/api/sessions/{session}/history").json()["entries"]
            users = [e["text"] for e in entries if e["kind"] == "user"]
            # every send recorded once, in order (a failed turn's message again for its retry)
            assert users == [m for m, _ in ends], (users, ends)
            calls = [c["id"] for e in entries if e["kind"] == "assistant" for c in e["tool_calls"]]
            results = Counter(e["call_id"] for e in entries if e["kind"] == "tool_result")
            assert len(set(calls)) == len(calls) and results == Counter(calls), (calls, results)
            replay = parse_sse(client.get(f"/api/sessions/{session}/events").text.splitlines())
            assert [e.id for e in replay] == list(range(1, len(replay) + 1))
        # the workers still take turns
        session = sessions[0]
        assert _turn(client, session, "one more", lambda _: None)[-1].data["result"]["status"] == (
            "completed"
        )


@pytest.mark.slow
def test_a_postgresql_restart_mid_turn_loses_and_repeats_nothing(
    cluster: Cluster, postgres: Postgres
) -> None:
    _restart_mid_turn(cluster, lambda: postgres.restart(down_s=2.0))


@pytest.mark.slow
def test_a_redis_restart_mid_turn_keeps_every_worker_running(
    cluster: Cluster, redis: Redis
) -> None:
    _restart_mid_turn(cluster, lambda: redis.restart(down_s=2.0))


WORKER = """
import sys
from contextengine.config import Config
from contextengine.workers.engine import run_worker

run_worker(
    Config(broker=sys.argv[1], worker_redelivery_s=3.0), lambda meta: None, lambda d, p: None, 1
)
"""


@pytest.mark.slow
def test_a_worker_that_stops_on_an_unrecoverable_error_is_started_again(
    redis: Redis, tmp_path: Path
) -> None:
    # A real fault Celery does not survive: a message in the queue that is not JSON (another
    # program's write, a torn one) makes its consumer raise, and the worker stops "on an
    # unrecoverable error" with exit code 1. ``run_worker`` starts it again, each time.
    broker = redis.database(5)
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        started = subprocess.Popen(
            [sys.executable, "-c", WORKER, broker], stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )  # fmt: skip
    worker = Process("worker", started, log)
    try:
        worker.wait_for(r"ready\.")
        with redis_client.Redis.from_url(broker) as client:
            for n in (1, 2):
                client.lpush(QUEUE, b"not a message {")
                worker.wait_for(rf"(starting it again[\s\S]*){{{n}}}ready\.")
        assert started.poll() is None
        text = log.read_text()
        assert text.count("Unrecoverable error: JSONDecodeError") == 2, text[-3000:]
        started.terminate()  # a shutdown signal ends it for good
        assert started.wait(timeout=30) == 0
    finally:
        worker.stop()
