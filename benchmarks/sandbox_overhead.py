"""What the bubblewrap sandbox adds to one ``shell_exec`` call (issue 10, item 3).

The same commands run through the tool, alternating sandboxed and unconfined calls so machine
noise hits both alike; the medians and their ratio are printed side by side.

    python benchmarks/sandbox_overhead.py [--calls 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from contextengine.toolkit.sandbox import SandboxPolicy
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

COMMANDS = ("true", "/usr/bin/python3 -c 'print(1)'", "ls -la /usr/bin | wc -l")


def _time_call(command: str, ctx: ToolContext) -> float:
    call = ToolCall("c", "shell_exec", json.dumps({"command": command}))
    started = time.perf_counter()
    outcome = default_toolset().execute(call, ctx)
    elapsed = time.perf_counter() - started
    if outcome.status != "success":
        raise SystemExit(f"{command!r} failed: {outcome.text}")
    return elapsed


def main() -> None:
    """Print median ms per call, sandboxed vs unconfined, for each command."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Workspace(Path(tmp))
        sandboxed = ToolContext(workspace, sandbox=SandboxPolicy())
        unconfined = ToolContext(workspace, sandbox=None)
        _time_call("true", sandboxed)  # the one-time bwrap self-check
        print(f"{'command':<34} {'sandboxed ms':>12} {'unconfined ms':>13} {'ratio':>6}")
        for command in COMMANDS:
            boxed, plain = [], []
            for _ in range(args.calls):
                boxed.append(_time_call(command, sandboxed))
                plain.append(_time_call(command, unconfined))
            b, p = statistics.median(boxed) * 1000, statistics.median(plain) * 1000
            print(f"{command:<34} {b:>12.1f} {p:>13.1f} {b / p:>6.2f}")


if __name__ == "__main__":
    main()
