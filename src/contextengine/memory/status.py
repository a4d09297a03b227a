"""The task-status tail (R4.2, seed 001 "任务目标重述"): objective, steps, current focus.

It ends every request and is never stored, so it may change every step without costing
a cache hit.
"""

from __future__ import annotations

import re

from contextengine.memory.plan import MARKS, Plan, one_line

OBJECTIVE_CHARS = 300
_REMINDER_BLOCK = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def objective_of(user_text: str) -> str:
    """A user message as an objective: harness reminders removed, one line, capped."""
    text = one_line(_REMINDER_BLOCK.sub(" ", user_text))
    if len(text) > OBJECTIVE_CHARS:
        text = text[: OBJECTIVE_CHARS - 1].rstrip() + "…"
    return text


def task_status(plan: Plan, first_user_text: str | None) -> str:
    """``## Current Task Status`` with the plan's goal (else the first user message)."""
    objective = plan.goal or (objective_of(first_user_text) if first_user_text else "")
    lines = ["## Current Task Status", f"**Objective**: {objective or '(not set)'}"]
    steps = plan.steps
    if steps:
        lines.append("**Progress**:")
        for number, step in enumerate(steps, 1):
            failed = " (FAILED)" if step.status == "failed" else ""
            lines.append(f"[{MARKS[step.status]}] Step {number}: {step.text}{failed}")
    else:
        lines.append("**Progress**: no steps planned yet")
    if plan.blockers:
        lines.append(f"**Blockers**: {plan.blockers}")
    current = plan.current_index
    if current is not None:
        lines.append(f"**Current Focus**: Step {current + 1} - {steps[current].text}")
    elif steps:
        lines.append("**Current Focus**: every step is finished; check the result and report")
    else:
        lines.append("**Current Focus**: make a plan with todo_write or memory_plan_update")
    return "\n".join(lines)
