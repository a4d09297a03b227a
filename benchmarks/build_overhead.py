"""Per-step request build cost at growing session sizes (issue 2, R11.3).

Sessions are grown to about 1k, 10k, 100k and 150k tokens (``len // 3`` estimate of the
request text). Then, round-robin across the sizes so machine noise hits all alike, each
step appends one assistant tool call and its result and builds the next request with the
prefix monitor; the build (with the monitor) is timed. A few steps per fresh session keep
each size near its label; several rounds give enough samples. Appending is not part of
the build: with fsync it costs a constant few ms per entry on this machine, at any size.
Target: flat (largest / smallest < 2) and < 1 ms at 150k tokens.

    python benchmarks/build_overhead.py [--rounds 10] [--steps 10]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from contextengine import (
    AssistantEntry,
    ContextBuilder,
    FullObservation,
    LiveContext,
    PrefixMonitor,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.context.tokens import estimate_tokens

SIZES = (1_000, 10_000, 100_000, 150_000)
OBSERVATION = "\n".join(
    f"{n:>6}\tdef function_{n}(value):  # line of a source file" for n in range(12)
)
TOOLS = [
    {
        "name": n,
        "description": f"The {n} tool.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for n in ("file_read", "file_write", "file_edit", "shell_exec", "file_grep", "todo_write")
]


class Subject:
    """One session of a given size with its builder and monitor."""

    def __init__(self, root: Path, target_tokens: int) -> None:
        root.mkdir(parents=True)
        self.target = target_tokens
        self.session = Session.create(
            root / "session", session_id=f"bench-{target_tokens}", durable=False
        )
        self.builder = ContextBuilder(
            system_prompt="You are a coding agent.", tools=TOOLS, project_root=root
        )
        self.monitor = PrefixMonitor()
        self.steps = 0
        self.session.append(UserEntry(text="Refactor the project and keep the tests green."))
        while estimate_tokens(self.builder.build(self.session).total_chars) < target_tokens:
            self.append_step()
        self.monitor.observe(self.builder.build(self.session))

    def append_step(self) -> int:
        n = self.steps
        self.steps += 1
        call = ToolCallRecord(
            id=f"call_{n}", name="file_read", arguments_json=f'{{"path":"src/m{n}.py"}}'
        )
        self.session.append(AssistantEntry(text=f"Reading module {n}.", tool_calls=(call,)))
        return self.session.append(
            ToolResultEntry(
                call_id=call.id, tool_name="file_read", status="success", content=OBSERVATION
            )
        ).index

    def timed_step(self) -> float:
        index = self.append_step()
        t1 = time.perf_counter()
        live = LiveContext(
            full_observations={
                index: FullObservation("file_read", f"call_{self.steps - 1}", OBSERVATION)
            },
            tail="## Current Task Status\n[>] Step 1",
        )
        request = self.builder.build(self.session, live)
        self.monitor.observe(request)
        return time.perf_counter() - t1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="fresh sessions per size")
    parser.add_argument("--steps", type=int, default=10, help="measured steps per session")
    args = parser.parse_args()
    builds: dict[int, list[float]] = {size: [] for size in SIZES}
    entries: dict[int, list[int]] = {size: [] for size in SIZES}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            subjects = [Subject(Path(tmp) / f"{r}-{size}", size) for size in SIZES]
            for _ in range(args.steps):
                for s in subjects:
                    builds[s.target].append(s.timed_step())
            for s in subjects:
                entries[s.target].append(len(s.session.records))
    print(f"{'session':>10} {'entries':>8} {'build ms (median)':>18} {'build ms (p90)':>15}")
    medians = {}
    for size in SIZES:
        b = sorted(builds[size])
        medians[size] = statistics.median(b)
        print(
            f"{size:>9,}t {max(entries[size]):>8} {medians[size] * 1e3:>18.3f} "
            f"{b[int(len(b) * 0.9)] * 1e3:>15.3f}"
        )
    ratio = medians[SIZES[-1]] / medians[SIZES[0]]
    print(f"ratio {SIZES[-1]:,}t / {SIZES[0]:,}t build time: {ratio:.2f}  (target < 2)")
    print(
        f"build at {SIZES[-1]:,}t: {medians[SIZES[-1]] * 1e3:.3f} ms  (target < 1 ms; seed budget 50 ms)"
    )


if __name__ == "__main__":
    main()
