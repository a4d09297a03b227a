"""MCP tools listed one by one vs tool search (R18.2): what every request pays.

One scripted coding task (plan, write, run, ask an MCP server the time, read, fix, run,
close the plan: 9 model calls) runs through the real agent loop with MCP servers attached,
real processes all: ``mcp-server-time`` from PyPI, the suite's test server
(``tests/support/mcp_server.py``, 11 tools) and generated servers of that script. Each
setup runs twice: every MCP tool listed in every request (``mcp_tool_budget_tokens`` huge,
Claude Code's convention) and deferred behind ``tool_search`` / ``tool_call`` (budget 0),
where the model first searches for the time tool. Per run: request chars, the cached share
(a request's leading part equal to the previous request's), and cost = uncached chars +
0.1 x cached chars, as ``benchmarks/fwbench/cost.py`` counts it; every run must finish the
task (the fixed file passes its check).

    python benchmarks/mcp_tools.py [--json] [--only 150-generated]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.context.request import Request

REPO = Path(__file__).resolve().parents[1]
TEST_SERVER = REPO / "tests" / "support" / "mcp_server.py"
CACHED_PRICE = 0.1
TIME: dict[str, Any] = {"command": sys.executable, "args": ["-m", "mcp_server_time"]}


def generated(count: int) -> dict[str, Any]:
    """A server of the test script with ``count`` generated tools (and its 11 fixed ones)."""
    return {"command": sys.executable, "args": [str(TEST_SERVER), "--generated", str(count)]}


SETUPS: dict[str, dict[str, dict[str, Any]]] = {
    "1 server": {"time": TIME},
    "3 servers": {"time": TIME, "test": generated(0), "gen": generated(50)},
    "8 servers": {
        "time": TIME,
        "test": generated(0),
        **{f"gen{k}": generated(10) for k in range(6)},
    },
    "50 generated": {"time": TIME, "gen": generated(50)},
    "150 generated": {"time": TIME, "gen": generated(150)},
}
BUGGY = "def add(a, b):\n    return a - b\n\nassert add(2, 3) == 5\n"


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"content": f"Next: {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}


def script(deferred: bool) -> list[dict[str, Any]]:
    """The task's replies; with tool search, the time tool is found first."""
    plan = [{"content": "Fix calc.py", "status": "in_progress"}]
    time_calls = (
        [
            _call("tool_search", query="current time in a timezone"),
            _call(
                "tool_call",
                name="mcp__time__get_current_time",
                arguments={"timezone": "Etc/UTC"},
            ),
        ]
        if deferred
        else [_call("mcp__time__get_current_time", timezone="Etc/UTC")]
    )
    return [
        _call("todo_write", todos=plan),
        _call("file_write", path="calc.py", content=BUGGY),
        _call("shell_exec", command=f"{sys.executable} calc.py"),
        *time_calls,
        _call("file_read", path="calc.py"),
        _call("file_edit", path="calc.py", old_text="a - b", new_text="a + b"),
        _call("shell_exec", command=f"{sys.executable} calc.py"),
        _call("todo_write", todos=[{"content": "Fix calc.py", "status": "done"}]),
        {"content": "calc.add subtracted; it adds now and its check passes (time noted)."},
    ]


@dataclass(frozen=True)
class Run:
    """One run's totals."""

    setup: str
    mode: str
    mcp_tools: int
    requests: int
    chars: int
    cached_chars: int
    cost: float
    finished: bool

    @property
    def cached_share(self) -> float:
        """Cached chars over all chars."""
        return self.cached_chars / max(self.chars, 1)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    low, high = 0, n
    while low < high:  # the longest equal prefix, by halving
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def measure(requests: list[Request]) -> tuple[int, int, float]:
    """Chars, cached chars and cost of a run's requests."""
    chars = cached = 0
    cost = 0.0
    previous = ""
    for request in requests:
        text = request.text()
        hit = _common_prefix(previous, text)
        chars, cached = chars + len(text), cached + hit
        cost += (len(text) - hit) + CACHED_PRICE * hit
        previous = text
    return chars, cached, cost


def run(setup: str, deferred: bool) -> Run:
    """The task with ``setup``'s servers, their tools listed or deferred."""
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    config = Config(
        mcp_servers=SETUPS[setup],
        mcp_project_file=False,
        mcp_tool_budget_tokens=0 if deferred else 10**9,
        mcp_start_timeout_s=180,
        sandbox=False,
    )
    provider = ScriptedProvider(script(deferred))
    with Agent(provider, folder, config) as agent:
        result = agent.run("Fix calc.py so that its check passes, and note the time in UTC.")
        assert agent.mcp is not None
        tools = len(agent.mcp.catalog.tools)
    finished = result.status == "completed" and "a + b" in (folder / "calc.py").read_text()
    chars, cached, cost = measure(provider.requests)
    mode = "tool search" if deferred else "all listed"
    return Run(setup, mode, tools, len(provider.requests), chars, cached, cost, finished)


def main() -> None:
    """Run every setup both ways and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", help="comma-separated setups: " + ", ".join(SETUPS))
    options = parser.parse_args()
    chosen = options.only.split(",") if options.only else list(SETUPS)
    runs = [run(setup, deferred) for setup in chosen for deferred in (False, True)]
    if options.json:
        print(json.dumps([asdict(r) | {"cached_share": r.cached_share} for r in runs], indent=2))
        return
    print(
        "| setup | MCP tools | mode | requests | request chars | cached | cost (chars) | x | finished |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    listed = {r.setup: r.cost for r in runs if r.mode == "all listed"}
    for r in runs:
        ratio = listed[r.setup] / r.cost
        print(
            f"| {r.setup} | {r.mcp_tools} | {r.mode} | {r.requests} | {r.chars:,} | "
            f"{r.cached_share:.0%} | {r.cost:,.0f} | {ratio:.2f} | {'yes' if r.finished else 'NO'} |"
        )


if __name__ == "__main__":
    main()
