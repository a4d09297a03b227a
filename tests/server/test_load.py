"""Load: 20 concurrent scripted sessions through a real uvicorn server process.

Checks that no event is lost or reordered in any session, that the cheap endpoints stay
fast while the turns run (p99 under 250 ms, the one timed assertion issue 10 asks for),
and that idle agents are evicted so memory stays bounded.

Four pollers time the cheap endpoints, each asking every ``POLL_EVERY_S`` as a busy web UI
would; asking back to back instead, they would be most of the server's load and time
their own queue. A round whose p99 is over the limit is run again, up to ``ROUNDS``.
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from .live import LiveServer, Sse, parse_sse, post_turn, scripted_app
from .load_app import STEPS

SESSIONS = 20
TURNS = 3
P99_LIMIT_S = 0.250
MIN_SAMPLES = 200
IDLE_S = 1.0
STARTUP_S = 30
RUN_TIMEOUT_S = 240
POLL_EVERY_S = 0.05
ROUNDS = 3


def rss_kib(pid: int) -> int:
    """The process's resident memory in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """The load server in a process of its own (the test's threads share no GIL with it)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    script = Path(__file__).with_name("load_app.py")
    process = subprocess.Popen(
        [sys.executable, str(script), str(workspace), str(IDLE_S)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        assert process.stderr is not None
        for line in process.stderr:
            found = re.search(r"open (http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
            if found:
                break
            assert time.monotonic() < deadline, "the load server did not start"
        else:
            pytest.fail("the load server exited before it started")
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield process, found.group(1), found.group(2)
    finally:
        process.terminate()
        process.wait(timeout=10)


def assert_complete_and_in_order(events: list[Sse], first_id: int) -> None:
    ids = [e.id for e in events]
    assert ids == list(range(first_id, first_id + len(events))), ids
    assert [e.event for e in events].count("done") == 1
    assert events[-1].event == "done"
    assert events[-1].data["result"]["status"] == "completed"
    assert [e.event for e in events].count("tool_call") == STEPS
    assert [e.event for e in events].count("tool_result") == STEPS


@dataclass(frozen=True)
class Round:
    """One round of turns: how long it took and the cheap endpoints' latencies meanwhile."""

    elapsed: float
    by_endpoint: dict[str, list[float]]

    @property
    def samples(self) -> list[float]:
        """Every endpoint's latencies together."""
        return [s for v in self.by_endpoint.values() for s in v]

    @property
    def p99(self) -> float:
        """The 99th percentile over all endpoints."""
        return statistics.quantiles(self.samples, n=100)[98]

    def report(self) -> str:
        """The round's figures, one line per endpoint."""
        every = self.samples
        cuts = statistics.quantiles(every, n=100)
        lines = [
            f"{SESSIONS} sessions x {TURNS} turns in {self.elapsed:.1f}s; cheap endpoints: "
            f"{len(every)} samples, p50 {cuts[49] * 1000:.1f} ms, p99 {cuts[98] * 1000:.1f} ms, "
            f"max {max(every) * 1000:.1f} ms"
        ]
        for name, samples in sorted(self.by_endpoint.items()):
            p99_each = statistics.quantiles(samples, n=100)[98]
            lines.append(f"  {name}: {len(samples)} samples, p99 {p99_each * 1000:.1f} ms")
        return "\n".join(lines)


def run_round(
    client: httpx.Client, sids: list[str], streamed: dict[str, list[Sse]], round_no: int
) -> Round:
    """Each session takes ``TURNS`` turns while four pollers time the cheap endpoints."""
    failures: list[BaseException] = []
    by_endpoint: dict[str, list[float]] = {}
    running = threading.Event()
    running.set()

    def drive(sid: str) -> None:
        try:
            for turn in range(TURNS):
                message = f"Write the notes, round {round_no}.{turn}."
                streamed[sid].extend(post_turn(client, sid, message))
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    def poll(paths: list[str]) -> None:
        # A client of its own: waits on the drivers' connection pool are not the server's.
        with httpx.Client(base_url=client.base_url, headers=client.headers, timeout=60) as own:
            while running.is_set():
                for path in paths:
                    time.sleep(POLL_EVERY_S)
                    started = time.perf_counter()
                    response = own.get(path)
                    endpoint = "usage" if path.endswith("/usage") else path
                    by_endpoint.setdefault(endpoint, []).append(time.perf_counter() - started)
                    assert response.status_code == 200, response.text

    # The pollers time the server, not this process: a full collection of the heap the
    # suite has grown here would stall them all at once.
    gc.freeze()
    drivers = [threading.Thread(target=drive, args=(sid,)) for sid in sids]
    cheap = [["/api/sessions", "/api/server"], [f"/api/sessions/{s}/usage" for s in sids]]
    pollers = [threading.Thread(target=poll, args=(cheap[n % 2],)) for n in range(4)]
    started = time.monotonic()
    for thread in (*drivers, *pollers):
        thread.start()
    for thread in drivers:
        thread.join(timeout=RUN_TIMEOUT_S)
    running.clear()
    for thread in pollers:
        thread.join(timeout=30)
    gc.unfreeze()
    assert not failures, failures[:3]
    assert not any(t.is_alive() for t in drivers), "some turns never ended"
    return Round(time.monotonic() - started, by_endpoint)


@pytest.mark.slow
def test_twenty_concurrent_sessions(
    server_process: tuple[subprocess.Popen[str], str, str],
) -> None:
    process, url, token = server_process
    limits = httpx.Limits(max_connections=SESSIONS + 8)
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, limits=limits
    ) as client:
        sids = [client.post("/api/sessions").json()["id"] for _ in range(SESSIONS)]
        rss_before = rss_kib(process.pid)
        streamed: dict[str, list[Sse]] = {sid: [] for sid in sids}
        rounds: list[Round] = []
        # This machine is shared: a stall of the host fails one round, a slow server all.
        while len(rounds) < ROUNDS and (not rounds or rounds[-1].p99 >= P99_LIMIT_S):
            rounds.append(run_round(client, sids, streamed, len(rounds)))
            print(f"\nround {len(rounds)}: {rounds[-1].report()}")
        rss_after = rss_kib(process.pid)
        print(f"server RSS {rss_before // 1024} -> {rss_after // 1024} MiB")

        # No event lost or reordered: each turn's stream is a run of consecutive ids
        # ending in `done`, and the session's record holds exactly the streamed events.
        for sid in sids:
            events = streamed[sid]
            turn_ends = [i for i, e in enumerate(events) if e.event == "done"]
            assert len(turn_ends) == TURNS * len(rounds)
            for start, end in zip([-1, *turn_ends], turn_ends, strict=False):
                assert_complete_and_in_order(events[start + 1 : end + 1], start + 2)
            with client.stream("GET", f"/api/sessions/{sid}/events") as response:
                assert parse_sse(response.iter_lines()) == events

        assert all(sum(map(len, r.by_endpoint.values())) >= MIN_SAMPLES for r in rounds)
        assert rounds[-1].p99 < P99_LIMIT_S, [f"{r.p99 * 1000:.0f} ms" for r in rounds]

        # Bounded memory: once idle, every agent and channel is closed and dropped.
        deadline = time.monotonic() + 10 * IDLE_S + 10
        while (status := client.get("/api/server").json()) != {
            "agents": 0,
            "channels": 0,
            "turns": 0,
        }:
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        # An evicted session resumes like any other.
        again = post_turn(client, sids[0], "One more round.")
        assert_complete_and_in_order(again, streamed[sids[0]][-1].id + 1)  # type: ignore[operator]


def test_idle_agents_are_evicted_and_busy_ones_kept(tmp_path: Path) -> None:
    from contextengine import Config

    from .live import Gate

    gate = Gate([{"content": "The first session's answer, given late."}])
    config = Config(server_idle_s=0.2)
    with LiveServer(scripted_app(tmp_path, gate, config)) as server, server.client() as client:
        busy, idle = (client.post("/api/sessions").json()["id"] for _ in range(2))
        result: dict[str, list[Sse]] = {}
        poster = threading.Thread(target=lambda: result.update(busy=post_turn(client, busy, "go")))
        poster.start()
        assert gate.asked.acquire(timeout=30)
        deadline = time.monotonic() + 30
        while client.get("/api/server").json() != {"agents": 1, "channels": 1, "turns": 1}:
            assert time.monotonic() < deadline, "the idle agent was never evicted"
            time.sleep(0.05)
        gate.allowed.release()
        poster.join(timeout=30)
        assert result["busy"][-1].data["result"]["status"] == "completed"
        while client.get("/api/server").json() != {"agents": 0, "channels": 0, "turns": 0}:
            assert time.monotonic() < deadline, "the finished agent was never evicted"
            time.sleep(0.05)
        assert client.get(f"/api/sessions/{idle}").json()["busy"] is False
