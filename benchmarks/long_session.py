"""Request size over very long sessions in a small window (issue 9 item 3, R7.4).

Drives one agent session through N rounds with a scripted model: each round reads a
module, greps the tree, writes a note (three tool calls with outputs of a few hundred to a
thousand characters) and answers. Summary side calls get a fixed-size summary. For each
N, prints the number of requests and compactions, the largest request (BPE tokens and the
scripted provider's own ``chars // 3``) against the window, and how many summaries the
last request shows. Bounded means: the largest request does not grow with N.

Two harder shapes: ``--message-chars`` pads every user message with a pasted log to that
many characters (older messages must leave with their rounds), and ``--summary-chars``
makes the summary model ignore its budget and write that many characters (the summary is
cut to 1.5x its budget).

    python benchmarks/long_session.py [--rounds 40 80 160] [--window 12000]
        [--message-chars 20000] [--summary-chars 40000]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from contextengine import Agent, Config, ScriptedProvider
from contextengine.compress.compaction import SUMMARY_HEADING
from contextengine.context.tokens import count_tokens

MODULES = 20


def round_script(rounds: int) -> Iterator[dict]:
    """Each round reads a module, greps the tree and writes a note, then answers."""
    for r in range(rounds):
        m = r % MODULES
        yield {
            "content": f"Reading module {m}.",
            "tool_calls": [{"name": "file_read", "arguments": {"path": f"src/m{m}.py"}}],
        }
        yield {
            "content": f"Looking for callers of f{m}_3.",
            "tool_calls": [{"name": "file_grep", "arguments": {"pattern": f"f{m}_3"}}],
        }
        yield {
            "content": "Writing the note.",
            "tool_calls": [
                {
                    "name": "file_write",
                    "arguments": {
                        "path": f"notes/m{m}.md",
                        "content": f"Module {m} (round {r}): thirty small functions.\n" * 6,
                    },
                }
            ],
        }
        yield {"content": f"Round {r}: module {m} has thirty functions; the note is written."}


SUMMARY = (
    f"{SUMMARY_HEADING}\n*(Contains context from the session start to now)*\n\n"
    "### ✅ Completed Milestones\n" + "* [✓] Notes written for the modules read so far.\n" * 12
)


def run(
    rounds: int, window: int, base: Path, message_chars: int = 0, summary_chars: int = 0
) -> dict[str, int]:
    """One session of ``rounds`` rounds; the sizes of its requests."""
    workspace = base / f"ws{rounds}"
    (workspace / "src").mkdir(parents=True)
    for n in range(MODULES):
        (workspace / "src" / f"m{n}.py").write_text(
            "".join(f"def f{n}_{k}(x):\n    return x + {k}\n" for k in range(30))
        )
    script = round_script(rounds)

    summary = SUMMARY
    if summary_chars:
        line = "* [✓] Read a module, grepped its callers and wrote its note.\n"
        summary += line * (summary_chars // len(line))

    def respond(request):
        return {"content": summary} if request.purpose == "summary" else next(script)

    provider = ScriptedProvider(respond)
    agent = Agent(provider, workspace, Config(context_window=window))
    for r in range(rounds):
        message = f"Round {r}: the next module."
        if message_chars:
            log = "".join(f"{n:06d} INFO worker ready\n" for n in range(message_chars // 23 + 1))
            message = f"{message} The log:\n{log}"[:message_chars]
        result = agent.run(message)
        if result.status != "completed":
            raise SystemExit(f"round {r} ended {result.status}: {result.error}")
    requests = provider.requests
    last = [r for r in requests if r.purpose == "main"][-1]
    return {
        "requests": len(requests),
        "compactions": sum(r.purpose == "summary" for r in requests),
        "max_bpe": max(sum(count_tokens(c) for c in r.chunks) for r in requests),
        "max_chars3": max(r.total_chars // 3 for r in requests),
        "summaries_in_view": last.text().count(SUMMARY_HEADING),
    }


def main() -> None:
    """Print one row per session length."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[40, 80, 160])
    parser.add_argument("--window", type=int, default=12_000)
    parser.add_argument(
        "--message-chars", type=int, default=0, help="pad each user message to this length"
    )
    parser.add_argument(
        "--summary-chars", type=int, default=0, help="summaries this long, over their budget"
    )
    args = parser.parse_args()
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else None))
    try:
        print(f"window {args.window} tokens")
        print(
            "| rounds | requests | compactions | largest request (BPE) | "
            "largest (chars/3) | summaries in view at the end |"
        )
        print("|---|---|---|---|---|---|")
        for rounds in args.rounds:
            row = run(rounds, args.window, base, args.message_chars, args.summary_chars)
            print(
                f"| {rounds} | {row['requests']} | {row['compactions']} | {row['max_bpe']:,} | "
                f"{row['max_chars3']:,} | {row['summaries_in_view']} |"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
