"""What a session store costs per append and per agent turn: files vs PostgreSQL (issue 15).

A throwaway PostgreSQL (fsync on, like the file store's fsync per append) is started in a temp
folder; the same appends and the same scripted agent turns run on both stores, alternating
rounds so machine noise hits both alike; medians and their ratio are printed side by side.

    python benchmarks/store_append.py [--appends 300] [--turns 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from contextengine import Agent, Config, ScriptedProvider, Session, UserEntry
from contextengine.session.store.choice import open_store

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.postgres import start_postgres

WRITE = {"name": "file_write", "arguments": {"path": "notes.txt", "content": "x\n"}}


def _append_ms(setting: str, folder: Path, count: int) -> list[float]:
    session = Session.create(folder, store=open_store(Config(store=setting)))
    times = []
    for i in range(count):
        started = time.perf_counter()
        session.append(UserEntry(text=f"message {i}"))
        times.append((time.perf_counter() - started) * 1000)
    session.close()
    return times


def _turn_ms(setting: str, workspace: Path, turns: int) -> list[float]:
    workspace.mkdir(parents=True)
    script = [{"tool_calls": [WRITE]}, {"content": "done"}] * turns
    times = []
    with Agent(ScriptedProvider(script), workspace, Config(store=setting)) as agent:
        for i in range(turns):
            started = time.perf_counter()
            agent.run(f"task {i}")
            times.append((time.perf_counter() - started) * 1000)
    return times


def _compare(
    name: str,
    measure: Callable[[str, Path], list[float]],
    settings: dict[str, str],
    base: Path,
    rounds: int = 3,
) -> None:
    samples: dict[str, list[float]] = {kind: [] for kind in settings}
    for r in range(rounds):
        for kind, setting in settings.items():
            samples[kind] += measure(setting, base / f"{name}-{kind}-{r}")
    files, pg = (statistics.median(samples[k]) for k in ("files", "postgresql"))
    p99 = {k: sorted(v)[int(0.99 * (len(v) - 1))] for k, v in samples.items()}
    print(
        f"{name:<8} median ms  files {files:7.2f}  postgresql {pg:7.2f}  ratio {pg / files:5.2f}x"
        f"   p99 ms  files {p99['files']:7.2f}  postgresql {p99['postgresql']:7.2f}"
    )


def main() -> None:
    """Print medians (and p99) per append and per turn for both stores."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="store-bench-") as tmp:
        base = Path(tmp)
        # its own temp folder: the server's user must reach it, and ``tmp`` is private
        server = start_postgres(Path(tempfile.mkdtemp(prefix="store-bench-pg-")), fsync=True)
        try:
            settings = {"files": str(base / "sessions"), "postgresql": server.url}
            _compare("append", lambda s, f: _append_ms(s, f, args.appends), settings, base)
            _compare("turn", lambda s, f: _turn_ms(s, f, args.turns), settings, base)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
