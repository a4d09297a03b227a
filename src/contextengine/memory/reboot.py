"""The 5-Question Reboot Test (R8.5, seed 004 §3.3) and the reading of its answer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

REBOOT_QUESTIONS: tuple[str, ...] = (
    "What is my original goal?",
    "What have I tried so far?",
    "What went wrong?",
    "What should I try differently?",
    "Should I ask for human help?",
)
PROGRESS_TAIL_CHARS = 500
# Kept in history for good (every later request reads it): it says only what the answer
# after it is.
REBOOT_NOTICE = "3-strike: the answer below is the 5-Question Reboot Test (tools paused)."

_HUMAN_HELP = re.compile(
    r"^[\s*_`>-]*HUMAN_HELP[*_`]*\s*:\s*(yes|no)\b[\s*_`]*(?:[-–—:]\s*)?(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
NO_QUESTION = "The agent asked for human help after three failures of the same kind."


def reboot_prompt(
    error_classes: Sequence[str], objective: str, plan_text: str, progress_text: str
) -> str:
    """The reboot prompt: why, the five questions, the objective, the plan, the end of
    progress.md. It stands on its own: the reboot request carries no history."""
    classes = ", ".join(f"`{c}`" for c in error_classes)
    questions = "\n".join(f"{n}. {q}" for n, q in enumerate(REBOOT_QUESTIONS, 1))
    tail = progress_text[-PROGRESS_TAIL_CHARS:]
    return (
        "## 5-Question Reboot Test\n"
        f"{classes} errors, three times: stop retrying the same approach. "
        f"Tools are paused; answer:\n{questions}\n\n"
        f"### Objective\n{objective or '(not set)'}\n\n"
        f"### Task plan (task_plan.md)\n{plan_text.rstrip() or '(empty)'}\n\n"
        f"### End of progress.md\n{tail.strip()}\n\n"
        "End with `HUMAN_HELP: no` or `HUMAN_HELP: yes - <question for a human>`."
    )


@dataclass(frozen=True)
class HumanHelp:
    """The answer to question 5: whether a human is needed, and the question for them."""

    needed: bool
    question: str = ""


def human_help(answer: str) -> HumanHelp:
    """Read the last ``HUMAN_HELP:`` line of a reboot answer (none means no help asked)."""
    found = list(_HUMAN_HELP.finditer(answer))
    if not found:
        return HumanHelp(False)
    last = found[-1]
    if last.group(1).lower() != "yes":
        return HumanHelp(False)
    question = last.group(2).strip().strip("*_`").strip()
    return HumanHelp(True, question or NO_QUESTION)
