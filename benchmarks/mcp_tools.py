"""MCP tools listed one by one vs tool search (R18.2): what the framework task pays.

The 25-step coding task of ``benchmarks/frameworks.py`` (``fwbench``: plan, read the spec,
write a module, run it, fix it, tests, README) runs through the real agent loop and the
real Anthropic adapter against a local fake Messages server, with MCP servers attached -
real processes all: ``mcp-server-time``, ``mcp-server-git`` and ``mcp-server-fetch`` from
PyPI, ``@modelcontextprotocol/server-everything`` and ``server-filesystem`` from npm
(``npm install -g``; a server not installed is left out with a note), the suite's test
server (``tests/support/mcp_server.py``, 11 tools) and generated servers of 50 and 150
tools. After reading the spec the model asks the time server for the time. Three modes:

* ``all listed``: every MCP tool in every request (``mcp_tool_budget_tokens`` huge), which
  is Claude Code's convention without tool search;
* ``engine search``: deferred behind the engine's ``tool_search`` / ``tool_call`` (one more
  model call: the search, whose result enters history);
* ``anthropic defer``: every MCP tool sent with ``defer_loading`` behind Anthropic's BM25
  tool search tool (``mcp_tool_search = "anthropic"``); the scripted reply searches on
  the server side (finding what the engine's BM25 finds) and calls the time tool.

Each request body is priced the way Anthropic bills it: tools that are not deferred, then
the system blocks, then the messages, as canonical JSON without ``cache_control``; a
``tool_reference`` block counts as the full definition of the tool it names (the API
expands it inline), and a reply that searched on the server side costs a second pass over
the request plus the search and its expanded result. Cached = the leading part equal to
the previous pass; cost = uncached chars + 0.1 x cached chars (``fwbench/cost.py``). Every
run must finish the task: every step ran as scripted, the final answer came, and the
workspace passes the task's check.

    python benchmarks/mcp_tools.py [--json] [--only "150 generated"] [--modes ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

from fwbench import task  # noqa: E402
from fwbench.script import FINAL_ANSWER, SIDE_REPLY, STEPS, contextengine  # noqa: E402

from contextengine import Config  # noqa: E402
from contextengine.agent.loop import Agent  # noqa: E402
from contextengine.providers.anthropic import AnthropicProvider  # noqa: E402
from contextengine.session.entries import ToolResultEntry  # noqa: E402
from providers.fake_servers import FakeModelServer  # noqa: E402

TEST_SERVER = REPO / "tests" / "support" / "mcp_server.py"
CACHED_PRICE = 0.1
LISTED, ENGINE, PROVIDER = "all listed", "engine search", "anthropic defer"
MODES = (LISTED, ENGINE, PROVIDER)
TIME_TOOL = "mcp__time__get_current_time"
TIME_ARGS = {"timezone": "Etc/UTC"}
QUERY = "current time in a timezone"
AFTER_STEP = 4  # the MCP call comes once the spec is read
SESSION_ID = "fwbench"  # fixed, so every run renders the same templates


def python_server(module: str, *args: str) -> dict[str, Any]:
    """A server from PyPI run with this Python."""
    return {"command": sys.executable, "args": ["-m", module, *args]}


def test_server(generated: int) -> dict[str, Any]:
    """The suite's test server: its 11 tools and ``generated`` more."""
    return {"command": sys.executable, "args": [str(TEST_SERVER), "--generated", str(generated)]}


def npm_server(binary: str, *args: str) -> dict[str, Any] | None:
    """A server installed with ``npm install -g`` (``None`` when it is not installed)."""
    found = shutil.which(binary)
    return {"command": found, "args": list(args)} if found else None


def _real(workspace: Path) -> dict[str, dict[str, Any] | None]:
    return {
        "time": python_server("mcp_server_time"),
        "git": python_server("mcp_server_git"),
        "fetch": python_server("mcp_server_fetch"),
        "everything": npm_server("mcp-server-everything"),
        "filesystem": npm_server("mcp-server-filesystem", str(workspace)),
    }


Servers = Callable[[Path], dict[str, dict[str, Any] | None]]
SETUPS: dict[str, Servers] = {
    "1 server": lambda ws: {"time": python_server("mcp_server_time")},
    "3 servers": lambda ws: {k: v for k, v in _real(ws).items() if k in ("time", "git", "fetch")},
    "8 servers": lambda ws: {
        **_real(ws),
        "test": test_server(0),
        "crm": test_server(20),
        "tickets": test_server(20),
    },
    "50 generated": lambda ws: {"time": python_server("mcp_server_time"), "gen": test_server(50)},
    "150 generated": lambda ws: {"time": python_server("mcp_server_time"), "gen": test_server(150)},
}


def _reply(thought: str, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"content": thought, "tool_calls": [{"name": tool, "arguments": dict(arguments)}]}


def script(mode: str, found: list[str]) -> list[tuple[dict[str, Any], bool]]:
    """The model's replies in ``mode``, each with whether its tool call is meant to fail;
    ``found``: what Anthropic's search returns for ``QUERY``."""
    steps = [(_reply(s.thought, *contextengine(s)), s.fails) for s in STEPS]
    mcp = {
        LISTED: [_reply("Noting the time.", TIME_TOOL, TIME_ARGS)],
        ENGINE: [
            _reply("Finding a time tool.", "tool_search", {"query": QUERY}),
            _reply("Noting the time.", "tool_call", {"name": TIME_TOOL, "arguments": TIME_ARGS}),
        ],
        PROVIDER: [
            {
                **_reply("Noting the time.", TIME_TOOL, TIME_ARGS),
                "tool_search": {"query": QUERY, "found": found},
            }
        ],
    }[mode]
    final = [({"content": FINAL_ANSWER}, False)]
    return [*steps[:AFTER_STEP], *((r, False) for r in mcp), *steps[AFTER_STEP:], *final]


class Player:
    """Answers the fake server: the script in order; a side call (no tools allowed) gets
    ``SIDE_REPLY``. Remembers which request got a server-side search."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.used = 0
        self.searched: dict[int, dict[str, Any]] = {}  # request number -> the search
        self.requests = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        number = self.requests
        self.requests += 1
        if not body.get("tools") or (body.get("tool_choice") or {}).get("type") == "none":
            return {"content": SIDE_REPLY}
        if self.used >= len(self.replies):
            return {"content": "The task is finished."}
        reply = self.replies[self.used]
        self.used += 1
        if "tool_search" in reply:
            self.searched[number] = reply["tool_search"]
        return reply


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _clean(value: Any, definitions: Mapping[str, Any]) -> Any:
    """``value`` without ``cache_control``, each ``tool_reference`` as its definition."""
    if isinstance(value, list):
        return [_clean(v, definitions) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "tool_reference":
        return definitions.get(value.get("tool_name"), value)
    return {k: _clean(v, definitions) for k, v in value.items() if k != "cache_control"}


def definitions_of(body: Mapping[str, Any]) -> dict[str, Any]:
    """The deferred tools' definitions by name, as billed once a search finds them."""
    return {
        t["name"]: {k: v for k, v in t.items() if k != "defer_loading"}
        for t in body.get("tools") or []
        if t.get("defer_loading")
    }


def billed_text(body: Mapping[str, Any]) -> str:
    """What the model reads of a Messages body: tools not deferred, system, messages (found
    tools' definitions inline), canonical JSON without cache marks."""
    definitions = definitions_of(body)
    tools = [t for t in body.get("tools") or [] if not t.get("defer_loading")]
    return (
        _dumps(_clean(tools, definitions))
        + _dumps(_clean(body.get("system") or [], definitions))
        + _dumps(_clean(body.get("messages") or [], definitions))
    )


def search_pass(body: Mapping[str, Any], search: Mapping[str, Any]) -> str:
    """The second pass of a reply that searched on the server side: the request, then the
    search and its result with the found tools' definitions."""
    definitions = definitions_of(body)
    blocks = [
        {
            "type": "server_tool_use",
            "name": "tool_search_tool_bm25",
            "input": {"query": search["query"]},
        },
        [definitions.get(name, name) for name in search["found"]],
    ]
    return billed_text(body) + _dumps(blocks)


@dataclass(frozen=True)
class Run:
    """One run's totals."""

    setup: str
    mode: str
    servers: int
    mcp_tools: int
    passes: int  # billed model passes: requests, plus one per server-side search
    chars: int
    cached_chars: int
    cost: float
    finished: bool
    problems: tuple[str, ...] = ()

    @property
    def cached_share(self) -> float:
        """Cached chars over all chars."""
        return self.cached_chars / max(self.chars, 1)


def price(texts: list[str]) -> tuple[int, int, float]:
    """Chars, cached chars and cost of a run's passes, each cached against the one before."""
    chars = cached = 0
    cost = 0.0
    previous = ""
    for text in texts:
        # Character by character on purpose: the cache reuses a prefix of the text.
        hit = len(os.path.commonprefix([previous, text]))  # noqa: RUF071
        chars, cached = chars + len(text), cached + hit
        cost += (len(text) - hit) + CACHED_PRICE * hit
        previous = text
    return chars, cached, cost


def run(setup: str, mode: str) -> Run:
    """The task with ``setup``'s servers in ``mode``."""
    work = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    workspace = task.seed(work / "ws")
    wanted = SETUPS[setup](workspace)
    missing = sorted(name for name, entry in wanted.items() if entry is None)
    if missing:
        print(f"note: {setup}: {', '.join(missing)} not installed, left out", file=sys.stderr)
    config = Config(
        mcp_servers={name: entry for name, entry in wanted.items() if entry is not None},
        mcp_project_file=False,
        mcp_tool_budget_tokens=10**9 if mode == LISTED else 0,
        mcp_tool_search="anthropic" if mode == PROVIDER else "engine",
        mcp_start_timeout_s=180,
    )
    player = Player()
    with FakeModelServer("anthropic", player) as server:
        provider = AnthropicProvider(
            "claude-fake", api_key="sk-ant-fake", base_url=server.base_url, max_retries=0
        )
        with Agent(provider, workspace, config, session_id=SESSION_ID) as agent:
            assert agent.mcp is not None
            found = [t.name for t in agent.mcp.catalog.search(QUERY)]
            planned = script(mode, found)
            player.replies = [reply for reply, _ in planned]
            result = agent.run(task.TASK)
            tools = len(agent.mcp.catalog.tools)
            outcomes = [
                r.entry.status
                for r in agent.session.records
                if isinstance(r.entry, ToolResultEntry)
            ]
        bodies = [r.json() for r in server.requests]
    problems = list(task.check(workspace))
    expected = [
        "error" if fails else "success" for reply, fails in planned if "tool_calls" in reply
    ]
    if outcomes != expected:
        problems.append(f"tool results {outcomes} instead of {expected}")
    if player.used != len(planned) or FINAL_ANSWER not in result.final_answer:
        problems.append(f"{player.used} of {len(planned)} replies used; status {result.status}")
    texts: list[str] = []
    for number, body in enumerate(bodies):
        texts.append(billed_text(body))
        if number in player.searched:
            texts.append(search_pass(body, player.searched[number]))
    chars, cached, cost = price(texts)
    servers = len(config.mcp_servers)
    finished = not problems
    return Run(
        setup, mode, servers, tools, len(texts), chars, cached, cost, finished, tuple(problems)
    )


def format_table(runs: list[Run]) -> str:
    """The markdown table: ``x all listed`` is how many times cheaper than listing every
    tool (Claude Code's convention) the run is."""
    listed = {r.setup: r.cost for r in runs if r.mode == LISTED}
    lines = [
        "| setup | servers | MCP tools | mode | passes | request chars | cached | cost (chars) "
        "| all listed costs | x all listed | finished |",
        "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in runs:
        base = listed.get(r.setup)
        ratio = f"{base / r.cost:.2f}" if base else "-"
        lines.append(
            f"| {r.setup} | {r.servers} | {r.mcp_tools} | {r.mode} | {r.passes} | {r.chars:,} | "
            f"{r.cached_share:.0%} | {r.cost:,.0f} | {f'{base:,.0f}' if base else '-'} | "
            f"{ratio} | {'yes' if r.finished else 'NO: ' + '; '.join(r.problems)} |"
        )
    return "\n".join(lines)


def main() -> int:
    """Run every setup in every mode and print the table (or JSON); exit 1 if a run did
    not finish the task."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", help="comma-separated setups: " + ", ".join(SETUPS))
    parser.add_argument("--modes", help="comma-separated modes: " + ", ".join(MODES))
    options = parser.parse_args()
    setups = options.only.split(",") if options.only else list(SETUPS)
    modes = options.modes.split(",") if options.modes else list(MODES)
    unknown = sorted(set(setups) - set(SETUPS)) + sorted(set(modes) - set(MODES))
    if unknown:
        parser.error(f"unknown setups or modes: {unknown}")
    runs = [run(setup, mode) for setup in setups for mode in modes]
    if options.json:
        rows = [asdict(r) | {"cached_share": r.cached_share} for r in runs]
        print(json.dumps(rows, indent=2))
    else:
        print(format_table(runs))
    return 0 if all(r.finished for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
