"""Disk cost of ``record_requests``: requests.jsonl next to the session log, on a long run.

Replays a recorded agent run (default: the bundled OpenHands one) through the real agent loop
with ``record_requests`` on, keeps the session folder, and prints the size of
``requests.jsonl`` against the session log and against writing every request out in full.

    python benchmarks/request_log_size.py [TRAJECTORY.json]
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contextengine.agent.parts import AgentRecipe
from contextengine.agent.request_log import read_requests
from contextengine.measure.replay import replay
from contextengine.measure.trajectory import load_trajectory

DEFAULT = (
    Path(__file__).parents[1] / "examples/trajectories/oh_llama4maverick_ponylang__ponyc-4595.json"
)


def main() -> None:
    """Replay, then measure the kept session folder."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trajectory", nargs="?", type=Path, default=DEFAULT)
    args = parser.parse_args()
    throwaway = tempfile.TemporaryDirectory
    with throwaway(prefix="request-log-size-") as outer:
        kept = Path(outer)

        @contextlib.contextmanager
        def keep_folder(prefix: str = "") -> Iterator[str]:
            # replay() works in a throwaway folder; this benchmark needs it afterwards
            yield tempfile.mkdtemp(prefix=prefix, dir=kept)

        tempfile.TemporaryDirectory = keep_folder  # type: ignore[assignment,misc]
        try:
            result = replay(load_trajectory(args.trajectory), AgentRecipe())
        finally:
            tempfile.TemporaryDirectory = throwaway  # type: ignore[misc]
        session_dir = next(p.parent for p in kept.rglob("requests.jsonl"))
        requests = list(read_requests(session_dir / "requests.jsonl"))
        full = sum(len(r.text().encode()) for r in requests)
        log = (session_dir / "requests.jsonl").stat().st_size
        session_log = (session_dir / "session.jsonl").stat().st_size
    print(f"trajectory: {args.trajectory.name} ({result.engine.steps} steps)")
    print(f"model calls recorded: {len(requests)}")
    print(f"session.jsonl:  {session_log:>12,} bytes")
    print(f"requests.jsonl: {log:>12,} bytes ({log / session_log:.2f}x the session log)")
    print(f"every request in full: {full:>12,} bytes ({full / log:.0f}x requests.jsonl)")


if __name__ == "__main__":
    main()
