"""A long single task (> 300 steps) in a small window: compactions happen, the plan survives."""

from __future__ import annotations

import json

import pytest

from contextengine import Agent, Config, ScriptedProvider, SummaryEntry
from contextengine.compress.compaction import SUMMARY_HEADING
from contextengine.context.request import Request
from contextengine.memory.status import FULL_EVERY

STEPS = 320
GOAL = "Audit every module of the project and record what each one does."


def _script():
    yield {
        "content": "Planning the audit.",
        "tool_calls": [
            {"name": "memory_plan_update", "arguments": {"goal": GOAL}},
            {
                "name": "todo_write",
                "arguments": {
                    "todos": [
                        {"content": "Read every module", "status": "in_progress"},
                        {"content": "Write the report", "status": "pending"},
                    ]
                },
            },
        ],
    }
    for n in range(STEPS):
        yield {
            "content": f"Reading module {n}.",
            "tool_calls": [{"name": "file_read", "arguments": {"path": f"src/m{n % 40}.py"}}],
        }
    yield {
        "content": "Every module was read; the audit found 40 modules, each holding one function."
    }


def _recites_plan(before: Request, request: Request) -> bool:
    """``request`` holds both steps of the plan in its tail or in a message ``before``
    did not have."""
    seen = {json.dumps(m, sort_keys=True) for m in before.messages}
    fresh = [
        m for m in request.messages[:-1] if json.dumps(m, sort_keys=True) not in seen
    ] + request.messages[-1:]
    return any(
        "Read every module" in str(m.get("content")) and "Write the report" in str(m.get("content"))
        for m in fresh
    )


@pytest.mark.slow
def test_long_single_task_compacts_and_keeps_the_plan(tmp_path):
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    for n in range(40):
        (workspace / "src" / f"m{n}.py").write_text(
            "".join(f"def f{n}_{k}(x):\n    return x + {k}\n" for k in range(30))
        )
    (workspace / "CODE_LAW.md").write_text("Never edit files during an audit.")
    script = _script()

    def respond(request):
        if request.purpose == "summary":
            return {
                "content": f"{SUMMARY_HEADING}\n*(Contains context from a to b)*\n\nModules read so far, none edited."
            }
        if request.purpose == "reboot":
            return {"content": "HUMAN_HELP: no"}
        return next(script)

    provider = ScriptedProvider(respond)
    agent = Agent(
        provider, workspace, Config(overhead_share=None, context_window=20_000, max_steps=400)
    )
    result = agent.run(GOAL)
    assert result.status == "completed", result.error
    assert result.steps > 300
    summaries = [r.entry for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    assert len(summaries) >= 3
    main = [r for r in provider.requests if r.purpose == "main"]
    assert max(r.total_chars for r in main) // 3 < 20_000
    last = main[-1]
    text = last.text()
    assert "Never edit files during an audit." in text
    assert GOAL in text
    # the plan is recited in full at least every FULL_EVERY iterations (R8.2), compactions
    # or not: in one of the last requests' tails, or, a compaction having just shortened
    # the history, in the plan file recited into it after the summary
    recent = list(zip(main[-FULL_EVERY - 1 :], main[-FULL_EVERY:], strict=False))
    assert any(_recites_plan(before, after) for before, after in recent), [
        r.messages[-1]["content"] for r in main[-FULL_EVERY:]
    ]
    plan = (agent.session_dir / "task_plan.md").read_text()
    assert GOAL in plan and "Read every module" in plan and "Write the report" in plan
    usage = [
        json.loads(line) for line in (agent.session_dir / "usage.jsonl").read_text().splitlines()
    ]
    causes = [u["prefix"]["break"]["cause"] for u in usage if "break" in u["prefix"]]
    assert "compaction" in causes and set(causes) <= {"compaction", "prune"}, (
        "the only cache breaks are compactions and prunings"
    )
