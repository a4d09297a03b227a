"""What delegating a side task to a sub-agent saves the parent's context (issue 12, R16).

One scripted task run two ways through the real agent loop, side by side: the parent reads
three source files itself and then works ``--steps`` more steps, or it hands the reading to
``agent_delegate`` and gets back a short answer, then works the same steps. Printed per
way: the parent's last request (tokens), the parent's input tokens over the session, the
input tokens of every call (child included) and their cached share, as the scripted
provider counts them (``len // 4`` of the request, cached = the prefix shared with the
previous request, a one-slot cache: so returning from the child to the parent is counted as
a miss of the parent's history, which a provider caching several prefixes would hit). Also
printed: what offering the tool costs every request (its definition).

    python benchmarks/subagent_context.py [--files 3] [--lines 120] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.agent.usage_log import read_usage
from contextengine.tools.agent_delegate import AgentDelegateTool
from contextengine.tools.registry import args_schema


def call(name: str, **arguments: object) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def workspace(root: Path, files: int, lines: int) -> list[str]:
    names = [f"module_{n}.py" for n in range(files)]
    for n, name in enumerate(names):
        body = "\n".join(
            f"def handler_{n}_{k}(request):  # handles case {k} of module {n}\n    return {k}"
            for k in range(lines // 2)
        )
        (root / name).write_text(body + "\n")
    return names


def work(steps: int) -> list[dict[str, Any]]:
    """The parent's later steps: small edits and checks after the reading."""
    return [
        {"content": f"Step {k}.", "tool_calls": [call("file_ls", path=".")]} for k in range(steps)
    ] + [{"content": "All handlers are listed in report.md; nothing else to do."}]


def inline(names: list[str], steps: int) -> list[dict[str, Any]]:
    reads = [{"content": "Reading.", "tool_calls": [call("file_read", path=n)]} for n in names]
    return [*reads, *work(steps)]


def delegated(names: list[str], steps: int) -> list[dict[str, Any]]:
    task = "Read " + ", ".join(names) + " and list what each module handles."
    child = [{"content": "Reading.", "tool_calls": [call("file_read", path=n)]} for n in names]
    summary = "; ".join(f"{n}: request handlers for its cases" for n in names)
    return [
        {"content": "Delegating.", "tool_calls": [call("agent_delegate", task=task)]},
        *child,
        {"content": f"Each module defines request handlers: {summary}."},
        *work(steps),
    ]


def measure(script: list[dict[str, Any]], root: Path) -> dict[str, float]:
    config = Config(subagents=True, sandbox=False, pruning=False)
    provider = ScriptedProvider(script)
    with Agent(provider, root, config) as agent:
        agent.run("List what every module handles, then tidy up.")
        parent = list(read_usage(agent.session_dir / "usage.jsonl"))
        sessions = [p for p in agent.session_dir.parent.iterdir() if p.is_dir()]
    every = [r for s in sessions for r in read_usage(s / "usage.jsonl")]
    total = sum(r.input_tokens for r in every)
    return {
        "parent last request": parent[-1].input_tokens,
        "parent input tokens": sum(r.input_tokens for r in parent),
        "all input tokens": total,
        "all uncached tokens": sum(r.input_tokens - r.cached_tokens for r in every),
        "calls": len(every),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--lines", type=int, default=120)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    results = {}
    for way, make in (("inline", inline), ("delegated", delegated)):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "ws"
            root.mkdir()
            names = workspace(root, args.files, args.lines)
            results[way] = measure(make(names, args.steps), root)
    print(f"{args.files} files of {args.lines} lines read, then {args.steps} more steps")
    print(f"{'':24}{'inline':>12}{'delegated':>12}{'ratio':>8}")
    for key in results["inline"]:
        a, b = results["inline"][key], results["delegated"][key]
        print(f"{key:24}{a:>12,.0f}{b:>12,.0f}{b / a:>8.2f}")
    spec = {"description": AgentDelegateTool.description, **args_schema(AgentDelegateTool.Args)}
    print(f"agent_delegate definition: {len(json.dumps(spec))} chars on every request")


if __name__ == "__main__":
    main()
