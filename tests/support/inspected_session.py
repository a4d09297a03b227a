"""A recorded session with a compaction and a deliberate cache break (CODE_LAW.md edited)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.compress.compaction import SUMMARY_HEADING
from contextengine.context.request import Request

ROUNDS = 6
BREAK_AFTER_ROUND = 1


def _command(r: int, s: int) -> str:
    # the first output is long enough to be externalized (a compressed ref in the history)
    return "python3 -c \"print('x' * 4000)\"" if (r, s) == (0, 0) else f"printf '%900s' r{r}s{s}"


def _replies() -> list[dict[str, Any]]:
    script: list[dict[str, Any]] = []
    for r in range(ROUNDS):
        for s in range(2):
            script.append(
                {
                    "content": f"round {r} step {s}",
                    "tool_calls": [
                        {"name": "shell_exec", "arguments": {"command": _command(r, s)}}
                    ],
                }
            )
        script.append({"content": f"Round {r} is finished and verified."})
    return script


def record_session(workspace: Path) -> tuple[Path, list[Request]]:
    """Run the scripted session in ``workspace``: its folder and the requests the model got.

    CODE_LAW.md changes after round ``BREAK_AFTER_ROUND`` (an ``l2_changed`` break) and the
    small context window forces at least one compaction (a ``summary`` call).
    """
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "CODE_LAW.md").write_text("Rule: always verify.\n")
    replies = iter(_replies())

    def respond(request: Request) -> dict[str, Any]:
        if request.purpose == "summary":
            return {"content": f"{SUMMARY_HEADING}\n\nThe user ran printf rounds."}
        return next(replies)

    config = Config(context_window=6000, keep_rounds=2, sandbox=False)
    provider = ScriptedProvider(respond)
    agent = Agent(provider, workspace, config)
    for r in range(ROUNDS):
        for _ in agent.stream(f"Round {r}: print things."):
            pass
        if r == BREAK_AFTER_ROUND:
            (workspace / "CODE_LAW.md").write_text("Rule: always verify twice.\n")
    agent.session.close()
    return agent.session_dir, provider.requests
