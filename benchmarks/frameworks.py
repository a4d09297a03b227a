"""Framework comparison: one scripted coding task through contextengine and its peers.

The same 25-step task (todo, ls, write, read, a run that fails, edits, tests that fail
then pass, a README; ``fwbench/script.py``) is driven through a plain append-only chat
loop, contextengine (default tools; the peers' six baseline tools; ``context_window=5000`` and
``8000``, which force a compaction) and pydantic-ai, openai-agents, smolagents and deepagents (default and, where the framework
has one, a compacting configuration), all against one local fake OpenAI Chat Completions
server that logs every request body and answers from the script. Cost comes from the
logged bodies (``fwbench/cost.py``): cached = the leading part equal to the same run's
previous request, cost = uncached chars + 0.1 x cached chars; tokens are o200k.

The peers run as subprocesses in ``.venv-peers`` (pinned in
``benchmarks/frameworks-requirements.txt``; ``--install`` creates it, or updates it once
contextengine's dependencies changed), one driver script
each (``fwbench/drivers/``), telemetry and tracing off. pydantic-ai, openai-agents and
LangChain also run with contextengine's integration for them (``<framework>+contextengine``,
the checkout's ``src`` first on their path); ``--big-notes`` runs the task with one big output.

    python benchmarks/frameworks.py --install     # first time (and after a dependency change)
    python benchmarks/frameworks.py [--json] [--only plain-chat,contextengine]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fwbench import task
from fwbench.cost import RunCost
from fwbench.local_runs import run_contextengine, run_plain_chat
from fwbench.script import FINAL_ANSWER, STEPS, VOICES
from fwbench.server import FakeOpenAI

from contextengine.measure.capture import captured_request
from contextengine.measure.profile import profile_requests

REPO = Path(__file__).resolve().parents[1]
PEERS_VENV = REPO / ".venv-peers"
REQUIREMENTS = REPO / "benchmarks" / "frameworks-requirements.txt"
DRIVERS = Path(__file__).resolve().parent / "fwbench" / "drivers"
DRIVER_TIMEOUT_S = 600
QUIET_ENV = {
    "OPENAI_API_KEY": "sk-fake",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "OTEL_SDK_DISABLED": "true",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
"""Every driver's environment on top of ours: no tracing, no telemetry, no hub."""

Local = Callable[[str, Path], str]


@dataclass(frozen=True)
class Setup:
    """One row: a framework in one configuration, the voice its model speaks, how it runs."""

    name: str
    voice: str
    local: Local | None = None
    driver: str | None = None
    mode: str = "default"


SETUPS: tuple[Setup, ...] = (
    Setup("plain-chat", "baseline", local=run_plain_chat),
    Setup("contextengine", "contextengine", local=run_contextengine),
    Setup(
        "contextengine/peer-tools",
        "baseline",
        local=lambda url, ws: run_contextengine(url, ws, peer_tools=True),
    ),
    Setup(
        "contextengine/window-5k",
        "contextengine",
        local=lambda url, ws: run_contextengine(url, ws, context_window=5000),
    ),
    Setup(
        "contextengine/window-8k",
        "contextengine",
        local=lambda url, ws: run_contextengine(url, ws, context_window=8000),
    ),
    Setup("pydantic-ai", "baseline", driver="pydantic_ai_driver.py"),
    Setup("pydantic-ai/compact-4k", "baseline", driver="pydantic_ai_driver.py", mode="compact"),
    Setup(
        "pydantic-ai+contextengine",
        "baseline",
        driver="pydantic_ai_driver.py",
        mode="contextengine",
    ),
    Setup("openai-agents", "baseline", driver="openai_agents_driver.py"),
    Setup(
        "openai-agents+contextengine",
        "baseline",
        driver="openai_agents_driver.py",
        mode="contextengine",
    ),
    Setup("langchain", "baseline", driver="langchain_driver.py"),
    Setup(
        "langchain+contextengine", "baseline", driver="langchain_driver.py", mode="contextengine"
    ),
    Setup("smolagents", "smolagents", driver="smolagents_driver.py"),
    Setup("deepagents", "deepagents", driver="deepagents_driver.py"),
    Setup("deepagents/window-8k", "deepagents", driver="deepagents_driver.py", mode="compact"),
)
LOCAL_SETUPS = tuple(s.name for s in SETUPS if s.local is not None)


@dataclass(frozen=True)
class Row:
    """One setup's measured run and whether it did the whole task."""

    name: str
    cost: RunCost
    problems: tuple[str, ...]
    breaks: int = 0


def peers_python(venv: Path = PEERS_VENV) -> Path | None:
    """The peers' Python, if the venv exists."""
    python = venv / "bin" / "python"
    return python if python.is_file() else None


def install_peers(venv: Path = PEERS_VENV) -> Path:
    """Create ``venv`` with the pinned peer frameworks and contextengine itself (core
    dependencies only, for the ``+contextengine`` rows); returns its Python."""
    python = venv / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
    subprocess.run([*pip, "-e", str(REPO)], check=True)
    return python


def _run_driver(setup: Setup, python: Path, url: str, workspace: Path) -> str:
    assert setup.driver is not None
    argv = [str(python), str(DRIVERS / setup.driver), url, str(workspace), setup.mode]
    # The drivers with contextengine import it from this checkout.
    env = {**os.environ, **QUIET_ENV, "OPENAI_BASE_URL": url, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{setup.driver} exited {done.returncode}: {done.stderr[-1500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["final"]


def run_setup(
    setup: Setup,
    fake: FakeOpenAI,
    run_id: str,
    work: Path,
    python: Path | None,
    dump: Path | None = None,
    big_notes: bool = False,
) -> Row:
    """Run one setup on a fresh workspace and check that it finished the task; with
    ``dump``, write its request bodies there (one JSON line each); ``big_notes``: the
    variant whose ``notes.md`` is about 16,000 chars longer."""
    workspace = task.seed(work / "ws" / run_id, big_notes)
    url = fake.open_run(run_id, VOICES[setup.voice])
    problems: list[str] = []
    try:
        if setup.local is not None:
            final = setup.local(url, workspace)
        else:
            assert python is not None
            final = _run_driver(setup, python, url, workspace)
        if FINAL_ANSWER not in final:
            problems.append(f"final answer {final[:80]!r}")
    except Exception as exc:
        problems.append(f"{type(exc).__name__}: {exc}"[:2000])
    log = fake.runs[run_id]
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps(body) + "\n" for body in log.bodies)
        (dump / f"{setup.name.replace('/', '_')}.jsonl").write_text(lines, encoding="utf-8")
    if log.steps != len(STEPS) + 1:
        problems.append(f"{log.steps} of {len(STEPS) + 1} scripted replies used")
    problems += log.errors + task.check(workspace)
    profile = profile_requests(captured_request(body) for body in log.bodies)
    breaks = profile.summary()["breaks"]
    return Row(setup.name, RunCost.total(log.meter.requests), tuple(problems), breaks)


def run_all(
    setups: Sequence[Setup],
    work: Path,
    python: Path | None,
    dump: Path | None = None,
    big_notes: bool = False,
) -> list[Row]:
    """Every setup in order against one fake server (run ids of equal length, so every
    workspace path, which tracebacks show, has the same length)."""
    with FakeOpenAI().serving() as fake:
        return [
            run_setup(setup, fake, f"run{k:02d}", work, python, dump, big_notes)
            for k, setup in enumerate(setups, 1)
        ]


def format_table(rows: Sequence[Row]) -> str:
    """The comparison table; ratios are against ``plain-chat`` when it ran, and a
    ``<framework>+contextengine`` row's ``x own`` against ``<framework>``'s (token cost);
    ``breaks`` are the cache breaks ``contextengine profile`` finds in the run's bodies."""
    base = next((r.cost for r in rows if r.name == "plain-chat"), None)
    by_name = {r.name: r.cost for r in rows}
    head = (
        f"{'framework':26} {'requests':>8} {'chars':>9} {'cached':>7} {'cost':>9} "
        f"{'x plain':>7} {'tok cost':>9} {'x plain':>7} {'x own':>6} {'breaks':>6} "
        f"{'max tok':>7} {'tools':>6}  status"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        c = row.cost
        ratio = f"{c.cost / base.cost:.2f}" if base else "-"
        token_ratio = f"{c.token_cost / base.token_cost:.2f}" if base else "-"
        main = c.requests - c.side_requests
        requests = f"{main}" + (f"+{c.side_requests}" if c.side_requests else "")
        status = "ok" if not row.problems else "; ".join(row.problems)
        own = by_name.get(row.name.removesuffix("+contextengine")) if "+" in row.name else None
        own_ratio = f"{c.token_cost / own.token_cost:.2f}" if own else "-"
        lines.append(
            f"{row.name:26} {requests:>8} {c.chars:>9,} {c.cached_share:>7.1%} {c.cost:>9,.0f} "
            f"{ratio:>7} {c.token_cost:>9,.0f} {token_ratio:>7} {own_ratio:>6} {row.breaks:>6} "
            f"{c.max_request_tokens:>7,} {c.tools_chars:>6,}  {status}"
        )
    return "\n".join(lines)


def as_json(rows: Sequence[Row]) -> list[dict[str, object]]:
    """The rows as plain data (``--json``)."""
    return [
        {
            "framework": r.name,
            **asdict(r.cost),
            "cached_share": r.cost.cached_share,
            "breaks": r.breaks,
            "problems": list(r.problems),
        }
        for r in rows
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: exit 0 when every setup finished the task."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--only", help="comma-separated setup names (default: all)")
    parser.add_argument(
        "--install", action="store_true", help=f"first create or update {PEERS_VENV}"
    )
    parser.add_argument("--keep", type=Path, help="work folder to keep (workspaces, sessions)")
    parser.add_argument("--dump", type=Path, help="write every request body to DIR/<setup>.jsonl")
    parser.add_argument(
        "--big-notes",
        action="store_true",
        help="the variant whose notes.md has a 16,000-char appendix (one big tool output)",
    )
    args = parser.parse_args(argv)
    wanted = args.only.split(",") if args.only else [s.name for s in SETUPS]
    unknown = sorted(set(wanted) - {s.name for s in SETUPS})
    if unknown:
        parser.error(f"unknown setups {unknown}; known: {[s.name for s in SETUPS]}")
    setups = [s for s in SETUPS if s.name in wanted]
    if args.install:
        install_peers()
    python = peers_python()
    if python is None and any(s.driver for s in setups):
        skipped = [s.name for s in setups if s.driver]
        print(
            f"no {PEERS_VENV} (run with --install): skipping {', '.join(skipped)}", file=sys.stderr
        )
        setups = [s for s in setups if s.local is not None]
    with tempfile.TemporaryDirectory(prefix="fwbench-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = run_all(setups, work, python, args.dump, args.big_notes)
    print(json.dumps(as_json(rows), indent=2) if args.json else format_table(rows))
    return 0 if all(not r.problems for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
