"""Turns on workers: throughput and per-step overhead with 1 vs 2 workers (issue 15).

Starts its own PostgreSQL (fsync on) and Redis in a temp folder, then, alternating rounds so
machine noise hits both alike: one server replica and 1 or 2 `contextengine worker`s (4 turn
threads each), sessions created, and one turn per session sent at once. A turn is a tool call
and an answer from a scripted model that answers at once, in two kinds: ``cpu`` (the tool is
`file_ls`: everything measured is the harness, queue, store and event stream) and ``io`` (the
tool sleeps --sleep seconds in the sandbox, standing in for a model or tool that waits).
Prints turns per second and the p50/p99 of the per-step overhead (a turn's POST-to-`done`
time less the sleep, over its 2 model calls), side by side.

    python benchmarks/workers.py [--sessions 24] [--rounds 2] [--sleep 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.postgres import Postgres, start_postgres
from support.redis import start_redis
from workers.cluster import TURN_SCRIPT, Cluster, Replica, post_turn, sleeping_script

STEPS_PER_TURN = 2  # the tool call's model call and the answer's


def _turn_s(replica: Replica, session: str) -> float:
    with replica.client() as client:
        started = time.perf_counter()
        events = post_turn(client, session, "List the files.")
        took = time.perf_counter() - started
    assert events[-1].data["result"]["status"] == "completed", events[-1].data
    return took


def _measure(
    workers: int,
    sessions: int,
    script: list[dict[str, Any]],
    postgres: Postgres,
    broker: str,
    folder: Path,
) -> tuple[float, list[float]]:
    """Turns per second and each turn's seconds, for ``workers`` workers."""
    store = postgres.new_database(folder.name)
    cluster = Cluster(folder, store, broker)
    try:
        for n in range(workers):
            cluster.worker(f"worker-{n + 1}", redelivery_s=600, script=script)
        replica = cluster.replica("replica")
        with replica.client() as client:
            ids = [client.post("/api/sessions").json()["id"] for _ in range(sessions)]
        started = time.perf_counter()
        with ThreadPoolExecutor(sessions) as pool:
            turns = list(pool.map(lambda s: _turn_s(replica, s), ids))
        return sessions / (time.perf_counter() - started), turns
    finally:
        cluster.stop()


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=24, help="concurrent turns per round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sleep", type=float, default=1.0, help="the io turns' tool sleep (s)")
    args = parser.parse_args()
    kinds = {"cpu": (TURN_SCRIPT, 0.0), "io": (sleeping_script(args.sleep), args.sleep)}
    base = Path(tempfile.mkdtemp(prefix="contextengine-workers-bench-"))
    postgres = start_postgres(Path(tempfile.mkdtemp(prefix="contextengine-pg-")), fsync=True)
    redis = start_redis(base / "redis")
    rates: dict[tuple[str, int], list[float]] = {(k, w): [] for k in kinds for w in (1, 2)}
    steps: dict[tuple[str, int], list[float]] = {key: [] for key in rates}
    try:
        for r in range(args.rounds):
            for k, (kind, (script, sleep)) in enumerate(kinds.items()):
                for workers in (1, 2) if r % 2 == 0 else (2, 1):
                    folder = base / f"r{r}_{kind}_w{workers}"
                    folder.mkdir()
                    # its own Redis database: nothing left from another run
                    broker = redis.database((r * 4 + k * 2 + workers) % 16)
                    rate, turns = _measure(workers, args.sessions, script, postgres, broker, folder)
                    rates[kind, workers].append(rate)
                    steps[kind, workers] += [(t - sleep) / STEPS_PER_TURN * 1000 for t in turns]
    finally:
        redis.stop()
        postgres.stop()
    print(f"{args.sessions} concurrent one-tool turns x {args.rounds} rounds, scripted model")
    print(f"{'':34} {'1 worker':>10} {'2 workers':>10} {'2 vs 1':>8}")
    for kind in kinds:
        one, two = statistics.median(rates[kind, 1]), statistics.median(rates[kind, 2])
        name = f"{kind}: turns per second (median)"
        print(f"{name:34} {one:10.2f} {two:10.2f} {two / one:7.2f}x")
        for q, label in ((0.5, "p50"), (0.99, "p99")):
            a, b = _percentile(steps[kind, 1], q), _percentile(steps[kind, 2], q)
            name = f"{kind}: step overhead {label} (ms)"
            print(f"{name:34} {a:10.0f} {b:10.0f} {b / a:7.2f}x")


if __name__ == "__main__":
    main()
