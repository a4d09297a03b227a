"""The task-status tail (R4.2, seed 001 "任务目标重述"): objective, steps, current focus.

It ends every request and is never stored, so it may change every step without costing
a cache hit; but it is paid uncached on every request, so it is said in few tokens, and
in full only when it says something new (``TailRecital``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from contextengine.memory.plan import MARKS, Plan, PlanStep
from contextengine.text import one_line

OBJECTIVE_CHARS = 80
HEADING = "## Task status"
NO_PLAN = "No plan yet."
ALL_DONE = "Focus: all steps done; check and report"
REPORT = "Focus: check and report"  # the brief line once ``ALL_DONE`` was said
MEMORY_NAMES = "task_plan.md, findings.md, progress.md."
TAIL_STEPS = 20  # steps a tail lists at most: a longer plan shows those around the focus
TAIL_STEPS_BEFORE = 3  # of them, the steps listed before the focus
FULL_EVERY = 5  # iterations between full recitals of an unchanged status (R8.2)
_REMINDER_BLOCK = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
# the element a benchmark harness wraps the task in, after its own boilerplate (OpenHands'
# and mini-swe-agent's SWE-bench prompts: ``<uploaded_files>…</uploaded_files> I've
# uploaded a python code repository … <pr_description> the issue </pr_description>``)
_TASK_ELEMENT = re.compile(
    r"<(pr_description|problem_statement|issue_description|issue|task)>(.*?)(?:</\1>|\Z)",
    re.DOTALL,
)


def objective_of(user_text: str) -> str:
    """A user message as an objective: harness reminders removed, the task element's
    content when a harness wrapped the task in one (to its end tag, or the text's end in
    a task cut short), one line, capped."""
    text = _REMINDER_BLOCK.sub(" ", user_text)
    if (task := _TASK_ELEMENT.search(text)) and task.group(2).strip():
        text = task.group(2)
    return _capped(one_line(text))


def _capped(text: str) -> str:
    return text if len(text) <= OBJECTIVE_CHARS else text[: OBJECTIVE_CHARS - 1].rstrip() + "…"


def task_status(
    plan: Plan, first_user_text: str | None, *, plannable: bool = True, objective: bool = True
) -> str:
    """The tail: heading, objective (the plan's goal, else the first user message), the
    steps with their marks, and the current focus, in as few tokens as say it (it is
    paid uncached on every request). ``plannable``: the session has a tool that writes the
    plan; without one, an empty plan is not announced (no call could fill it).
    ``objective``: False leaves the objective out (the message just before states it)."""
    lines = [HEADING]
    if objective:
        goal = _capped(plan.goal) or (objective_of(first_user_text) if first_user_text else "")
        lines.append(f"Objective: {goal or '(not set)'}")
    steps = plan.steps
    if not steps and plannable:
        lines.append(NO_PLAN)
    current = plan.current_index
    start = _shown_from(len(steps), current)
    end = min(len(steps), start + TAIL_STEPS)
    if start:
        lines.append(f"… steps 1-{start}: {_tally(steps[:start])}")
    for number, step in enumerate(steps[start:end], start + 1):
        lines.append(f"[{MARKS[step.status]}] {number} {step.text}")
    if end < len(steps):
        lines.append(f"… steps {end + 1}-{len(steps)}: {_tally(steps[end:])} (task_plan.md)")
    if plan.blockers:
        lines.append(f"Blockers: {plan.blockers}")
    if current is not None:
        lines.append(f"Focus: step {current + 1}")
    elif steps:
        lines.append(ALL_DONE)
    return "\n".join(lines)


def _shown_from(count: int, current: int | None) -> int:
    """The first step a long plan's tail lists: a few before the focus (the end of a
    finished plan), so the focus and the steps after it are in the ``TAIL_STEPS`` shown."""
    if count <= TAIL_STEPS:
        return 0
    focus = count if current is None else current
    return max(0, min(focus - TAIL_STEPS_BEFORE, count - TAIL_STEPS))


def _tally(steps: Sequence[PlanStep]) -> str:
    """How many of ``steps`` are in each state (pending, in progress, done, failed order)."""
    counts = Counter(step.status for step in steps)
    return ", ".join(f"{counts[s]} {s.replace('_', ' ')}" for s in MARKS if counts[s])


def errors_block(errors: Sequence[object]) -> str:
    """``Recent errors (unresolved):`` and one line each, or nothing without errors."""
    if not errors:
        return ""
    return "\nRecent errors (unresolved):" + "".join(f"\n- {e}" for e in errors)


def focus_line(plan: Plan) -> str:
    """The step in focus by its number (its text is in view: in the last full recital or
    the model's own plan call, as any change of the plan is), or, every step being
    finished, to check and report, or that there is no plan."""
    current = plan.current_index
    if current is not None:
        return f"Focus: step {current + 1}"
    if plan.steps:
        return REPORT
    return NO_PLAN


class TailRecital:
    """Chooses the tail of each iteration: the full status when it changed, and (while
    a step of the plan is open) every ``FULL_EVERY`` iterations, or at a turn's first
    request when that long has passed; else the brief focus line. A chat whose every turn
    is one reply would otherwise pay the whole status, unchanged, on every request.

    ``plannable``: the session has a tool that writes the plan. Without one, a session
    whose plan is empty has no steps or focus to recite: its status (the objective) is
    recited when it changes and no request carries a brief line, since "no plan yet" on
    every request would be paid for nothing the model could act on."""

    def __init__(self, *, plannable: bool = True) -> None:
        self._plannable = plannable
        self._full: str | None = None
        self._full_at = -FULL_EVERY
        self._named_at: int | None = None  # when the memory files' folder was last named
        self._turn_started = True

    def recital(
        self,
        plan: Plan,
        first_user_text: str | None,
        iteration: int,
        errors: Sequence[object] = (),
        *,
        just_written: bool = False,
        where: str | None = None,
        objective_is_request: bool = False,
        high_risk: bool = False,
        in_view: bool = False,
    ) -> str | None:
        """The full status when it is due at ``iteration`` (model calls so far), else
        ``None``. It is due when it changed, while a step is open every ``FULL_EVERY``
        iterations (R8.2), and at a turn's first request unless it was recited fewer than
        ``FULL_EVERY`` iterations before or the session cannot plan and has no plan; it
        lists ``errors``, the unresolved recent ones (a new error alone is no change:
        history holds it verbatim).
        ``just_written``: the model's own plan call, the message before, changed the plan:
        the steps are in view, so the change counts as recited. ``where``: the folder of
        the memory files, named with the first recital it is given to and a turn's (a
        session that cannot plan gives it once it asks the model to use the files).
        ``objective_is_request``: the objective is the turn's request, so a turn's first
        request, which ends with that message, leaves it out (recited all the same).
        ``high_risk``: the request follows a high-risk call, so it is due (R8.2).
        ``in_view``: the history is short enough that the objective, the model's own plan
        call and any error are all in its recent view: nothing is due but the full status,
        without the errors block, after a high-risk call (``_in_view``; a plan call in the
        same batch shows it already), and the status counts as recited; once out of view, the first full
        recital is the one due then (periodic, naming the memory folder, high-risk)."""
        full = task_status(plan, first_user_text, plannable=self._plannable)
        if in_view:
            return self._in_view(plan, full, iteration, just_written, high_risk)
        stale = iteration - self._full_at >= FULL_EVERY
        recitable = self._recitable(plan)
        opening = self._turn_started
        turn_due, self._turn_started = opening and stale and recitable, False
        periodic = plan.current_index is not None and stale
        naming = where is not None and self._named_at is None
        due = iteration == self._full_at or periodic or turn_due or naming or high_risk
        if just_written and full != self._full and not naming:
            self._full, self._full_at = full, iteration
            return None
        if full != self._full or due:
            self._full, self._full_at = full, iteration
            said = (
                task_status(plan, first_user_text, plannable=self._plannable, objective=False)
                if opening and objective_is_request
                else full
            )
            if said == HEADING and not errors and where is None:
                return None  # a session that cannot plan, right after its request
            if naming or (turn_due and where is not None):
                self._named_at = iteration
            memory = f"\nMemory files: {where}/ {MEMORY_NAMES}" if where else ""
            return said + errors_block(errors) + (memory if iteration == self._named_at else "")
        return None

    def _in_view(
        self, plan: Plan, full: str, iteration: int, just_written: bool, high_risk: bool
    ) -> str | None:
        """``recital`` in a short history: after a high-risk call the full status,
        objective, steps and focus (R8.2), without the errors or memory folder the history
        holds in view; else nothing, the status counting as recited."""
        self._turn_started = False
        if not high_risk or just_written:
            self._full = full  # in view, so as good as recited
            if just_written:
                self._full_at = iteration
            return None
        self._full, self._full_at = full, iteration
        return full

    def tail(
        self,
        plan: Plan,
        first_user_text: str | None,
        iteration: int,
        errors: Sequence[object] = (),
        *,
        just_written: bool = False,
        where: str | None = None,
        objective_is_request: bool = False,
        high_risk: bool = False,
        in_view: bool = False,
    ) -> str | None:
        """The tail of the request made at ``iteration``: the full status when it is due
        (``recital``), else one line, the focus: the steps were recited unchanged, or are
        the model's own plan call just before (no heading and no step text: the line is
        paid uncached on every such request), never after a high-risk call
        (``high_risk``); ``None`` while a session that cannot plan
        has no plan and nothing new to say. ``in_view``: see ``recital``."""
        full = self.recital(
            plan,
            first_user_text,
            iteration,
            errors,
            just_written=just_written,
            where=where,
            objective_is_request=objective_is_request,
            high_risk=high_risk,
            in_view=in_view,
        )
        if full is not None:
            return full
        if not self._recitable(plan):
            return None
        return focus_line(plan)

    def _recitable(self, plan: Plan) -> bool:
        """The plan has steps, or a call of the session could give it some."""
        return bool(plan.steps) or self._plannable

    def new_turn(self) -> None:
        """A user turn starts: its first request recites the full status if that was
        not done in the last ``FULL_EVERY`` iterations."""
        self._turn_started = True
