"""The task plan (R4.1, R8.1): a small model of ``task_plan.md`` and the changes it accepts.

The markdown file is the truth (a human or the model may edit it); ``parse_plan`` reads it
back tolerantly and ``render_plan`` writes the seed's template. Every text field is one
line, so a value can never break the file's structure. Steps are numbered across phases,
the same numbers the task-status tail shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from contextengine.context.tokens import count_tokens, cut_at_line
from contextengine.errors import PlanUpdateError
from contextengine.text import one_line

TodoStatus = Literal["pending", "in_progress", "done", "failed"]
"""A plan step's status; ``todo_write`` sets the same four."""
STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "done", "failed")
MARKS: dict[TodoStatus, str] = {"pending": " ", "in_progress": ">", "done": "x", "failed": "!"}
SUFFIXES: dict[TodoStatus, str] = {"done": " (done)", "failed": " (failed)"}
_STATUS_OF_MARK: dict[str, TodoStatus] = {
    " ": "pending",
    ">": "in_progress",
    "x": "done",
    "X": "done",
    "!": "failed",
}

GOAL_PLACEHOLDER = "(not set yet: write it with memory_plan_update)"
STEPS_PLACEHOLDER = "(no steps yet: add them with todo_write)"
NONE_YET = "(none yet)"
MARK_LEGEND = "Step marks: [ ] pending, [>] in progress, [x] done, [!] failed."

_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s*\[([ xX>!])\]\s*(.*?)\s*$")
_PHASE = re.compile(r"^###\s+(?:Phase\s+\d+\s*(?::|\.|-|—)?\s*)?(.*?)\s*$")
_FIELD = re.compile(r"^\*\*([^*]+)\*\*:\s*(.*?)\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*?)\s*$")
_RISK = re.compile(r"^[-*+]\s+Risk:\s*(.*?)\s*$")
_MITIGATION = re.compile(r"^\s+[-*+]\s+Mitigation:\s*(.*?)\s*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanStep(_Frozen):
    """One step and its status."""

    text: str
    status: TodoStatus = "pending"


class Phase(_Frozen):
    """A phase of the execution plan: a name, a goal, steps and the expected output."""

    name: str = ""
    goal: str = ""
    steps: tuple[PlanStep, ...] = ()
    expected_output: str = ""


class Risk(_Frozen):
    """A risk and how to mitigate it."""

    risk: str
    mitigation: str = ""


class Plan(_Frozen):
    """The content of ``task_plan.md``; ``extra`` keeps unknown ``##`` sections verbatim."""

    title: str = ""
    goal: str = ""
    blockers: str = ""
    phases: tuple[Phase, ...] = ()
    decisions: tuple[str, ...] = ()
    risks: tuple[Risk, ...] = ()
    extra: tuple[str, ...] = ()

    @property
    def steps(self) -> tuple[PlanStep, ...]:
        """Every step, in plan order (step ``n`` is ``steps[n - 1]``)."""
        return tuple(step for phase in self.phases for step in phase.steps)

    @property
    def current_index(self) -> int | None:
        """Index of the step in focus: the first in progress, else the first pending one."""
        steps = self.steps
        for wanted in ("in_progress", "pending"):
            for i, step in enumerate(steps):
                if step.status == wanted:
                    return i
        return None

    def phase_of(self, index: int) -> Phase | None:
        """The phase holding step ``index`` (0-based)."""
        seen = 0
        for phase in self.phases:
            seen += len(phase.steps)
            if index < seen:
                return phase
        return None


class StepStatus(_Frozen):
    """A new status for one step, by number."""

    step: int = Field(ge=1)
    status: TodoStatus


class StepInput(_Frozen):
    """One step and its status."""

    content: str = Field(min_length=1)
    status: TodoStatus = "pending"


class PhaseInput(_Frozen):
    """A phase: name, goal, steps, expected output."""

    name: str = Field(min_length=1)
    goal: str = ""
    steps: tuple[StepInput, ...] = ()
    expected_output: str = ""


class RiskInput(_Frozen):
    """A risk and its mitigation."""

    risk: str = Field(min_length=1)
    mitigation: str = ""


class PlanUpdate(_Frozen):
    """A change to the plan; fields left out stay as they are."""

    title: str | None = None
    goal: str | None = None
    phases: tuple[PhaseInput, ...] | None = None
    step_status: tuple[StepStatus, ...] | None = None
    blockers: str | None = Field(None, description="An empty string clears them.")
    add_decisions: tuple[str, ...] | None = None
    add_risks: tuple[RiskInput, ...] | None = None

    def is_empty(self) -> bool:
        """Whether the update changes nothing."""
        return all(getattr(self, name) is None for name in type(self).model_fields)


def apply_update(plan: Plan, update: PlanUpdate) -> Plan:
    """``plan`` with ``update`` applied."""
    changes: dict[str, object] = {}
    if update.title is not None:
        changes["title"] = one_line(update.title)
    if update.goal is not None:
        changes["goal"] = one_line(update.goal)
    phases = plan.phases
    if update.phases is not None:
        phases = tuple(
            Phase(
                name=one_line(p.name),
                goal=one_line(p.goal),
                steps=tuple(PlanStep(text=one_line(s.content), status=s.status) for s in p.steps),
                expected_output=one_line(p.expected_output),
            )
            for p in update.phases
        )
    if update.step_status:
        phases = _set_statuses(phases, update.step_status)
    changes["phases"] = phases
    if update.blockers is not None:
        changes["blockers"] = one_line(update.blockers)
    if update.add_decisions:
        changes["decisions"] = plan.decisions + tuple(
            d for d in map(one_line, update.add_decisions) if d
        )
    if update.add_risks:
        changes["risks"] = plan.risks + tuple(
            Risk(risk=one_line(r.risk), mitigation=one_line(r.mitigation)) for r in update.add_risks
        )
    return plan.model_copy(update=changes)


def _set_statuses(phases: tuple[Phase, ...], changes: Sequence[StepStatus]) -> tuple[Phase, ...]:
    total = sum(len(p.steps) for p in phases)
    wanted = {}
    for change in changes:
        if change.step > total:
            raise PlanUpdateError(
                f"step {change.step} does not exist; the plan has {total} step(s)"
            )
        wanted[change.step - 1] = change.status
    out, index = [], 0
    for phase in phases:
        steps = []
        for step in phase.steps:
            status = wanted.get(index, step.status)
            steps.append(
                step if status == step.status else step.model_copy(update={"status": status})
            )
            index += 1
        out.append(phase.model_copy(update={"steps": tuple(steps)}))
    return tuple(out)


def apply_todos(plan: Plan, todos: Iterable[tuple[str, TodoStatus]]) -> Plan:
    """``plan`` with its steps replaced by a complete todo list (``todo_write``).

    A todo whose text matches an existing step keeps that step's phase; a new todo joins
    the phase of the todo before it (the first phase, or a new one, when it leads). Phases
    left without steps are dropped, unless they never had any.
    """
    phases = list(plan.phases) or [Phase()]
    home: dict[str, list[int]] = {}
    for p, phase in enumerate(phases):
        for step in phase.steps:
            home.setdefault(step.text.casefold(), []).append(p)
    placed: list[list[PlanStep]] = [[] for _ in phases]
    current = 0
    for text, status in todos:
        text = one_line(text)
        slots = home.get(text.casefold())
        if slots:
            current = slots.pop(0)
        placed[current].append(PlanStep(text=text, status=status))
    kept = tuple(
        phase.model_copy(update={"steps": tuple(steps)})
        for phase, steps in zip(phases, placed, strict=True)
        if steps or (not phase.steps and (phase.name or phase.goal))
    )
    return plan.model_copy(update={"phases": kept})


def render_plan(plan: Plan) -> str:
    """``task_plan.md`` in the seed's template (Current Status is derived from the steps)."""
    steps = plan.steps
    current = plan.current_index
    phase = plan.phase_of(current) if current is not None else None
    done = sum(1 for s in steps if s.status == "done")
    failed = sum(1 for s in steps if s.status == "failed")
    progress = f"{done}/{len(steps)} steps done" + (f", {failed} failed" if failed else "")
    lines = [
        f"# Task Plan: {plan.title}" if plan.title else "# Task Plan",
        "",
        "## Goal",
        plan.goal or GOAL_PLACEHOLDER,
        "",
        "## Current Status",
        f"- Phase: {_phase_label(plan, phase) if phase else '-'}",
        f"- Progress: {progress if steps else 'not started'}",
        f"- Blockers: {plan.blockers or 'none'}",
        "",
        "## Execution Plan",
        MARK_LEGEND,
    ]
    if not plan.phases:
        lines += ["", STEPS_PLACEHOLDER]
    number = 0
    for n, ph in enumerate(plan.phases, 1):
        lines += ["", f"### Phase {n}: {ph.name}" if ph.name else f"### Phase {n}"]
        if ph.goal:
            lines.append(f"**Goal**: {ph.goal}")
        lines.append("**Steps**:")
        for step in ph.steps:
            number += 1
            suffix = SUFFIXES.get(step.status, "")
            lines.append(f"{number}. [{MARKS[step.status]}] {step.text}{suffix}")
        if ph.expected_output:
            lines.append(f"**Expected Output**: {ph.expected_output}")
    lines += ["", "## Technical Decisions"]
    lines += [f"- {d}" for d in plan.decisions] or [f"- {NONE_YET}"]
    lines += ["", "## Risks & Mitigation"]
    for risk in plan.risks:
        lines.append(f"- Risk: {risk.risk}")
        if risk.mitigation:
            lines.append(f"  - Mitigation: {risk.mitigation}")
    if not plan.risks:
        lines.append(f"- {NONE_YET}")
    for section in plan.extra:
        lines += ["", section]
    return "\n".join(lines) + "\n"


EMPTY_PLAN = render_plan(Plan())
"""``task_plan.md`` as created: the template with nothing filled in."""

# What a recited plan may take of the window (the goal, status and steps come first, so a
# cut keeps them and drops the end of the decisions, risks and extra sections).
RECITAL_SHARE = 0.1
RECITAL_MAX_TOKENS = 2_000
PLAN_CUT = "[… task_plan.md goes on: {tokens:,} tokens in all; read it whole with file_read.]"


def recital_tokens(context_window: int) -> int:
    """Tokens a plan recited into a request may take in a ``context_window``."""
    return min(RECITAL_MAX_TOKENS, int(RECITAL_SHARE * context_window))


def fit_plan(text: str, limit_tokens: int) -> str:
    """``task_plan.md``'s text, or its first whole lines within ``limit_tokens`` BPE tokens
    and a line saying the file goes on."""
    total = count_tokens(text)
    if total <= limit_tokens:
        return text
    return cut_at_line(text, limit_tokens, PLAN_CUT.format(tokens=total))


def _phase_label(plan: Plan, phase: Phase) -> str:
    number = plan.phases.index(phase) + 1
    return f"Phase {number}: {phase.name}" if phase.name else f"Phase {number}"


def parse_plan(text: str) -> Plan:
    """Read ``task_plan.md`` back; tolerant of hand edits, unknown sections kept verbatim."""
    fields: dict[str, object] = {"title": ""}
    sections = _sections(text)
    for heading, body in sections:
        name = heading.casefold()
        if heading.startswith("# "):
            title = re.sub(r"^#\s+Task Plan\s*:?\s*", "", heading)
            fields["title"] = one_line(title) if title != heading else one_line(heading[2:])
        elif name == "## goal":
            fields["goal"] = _paragraph(body, GOAL_PLACEHOLDER)
        elif name == "## current status":
            for line in body:
                found = re.match(r"^\s*[-*+]\s*Blockers:\s*(.*?)\s*$", line)
                if found and found.group(1).casefold() != "none":
                    fields["blockers"] = one_line(found.group(1))
        elif name == "## execution plan":
            fields["phases"] = _phases(body)
        elif name == "## technical decisions":
            fields["decisions"] = tuple(
                item
                for line in body
                if (m := _BULLET.match(line)) and (item := one_line(m.group(1))) != NONE_YET
            )
        elif name.startswith("## risks"):
            fields["risks"] = _risks(body)
        elif heading:
            extra = fields.setdefault("extra", [])
            assert isinstance(extra, list)
            extra.append("\n".join([heading, *body]).rstrip())
    if "extra" in fields:
        fields["extra"] = tuple(fields["extra"])  # type: ignore[arg-type]
    return Plan.model_validate(fields)


def _sections(text: str) -> list[tuple[str, list[str]]]:
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        if re.match(r"^#{1,2}\s", line):
            sections.append((line.rstrip(), []))
        else:
            sections[-1][1].append(line)
    return sections


def _paragraph(body: list[str], placeholder: str) -> str:
    text = one_line(" ".join(body))
    return "" if text == placeholder else text


def _phases(body: list[str]) -> tuple[Phase, ...]:
    phases: list[dict[str, Any]] = []

    def current() -> dict[str, Any]:
        if not phases:
            phases.append({"steps": []})
        return phases[-1]

    for line in body:
        heading = _PHASE.match(line)
        if heading:
            phases.append({"name": one_line(heading.group(1)), "steps": []})
            continue
        step = _STEP.match(line)
        if step:
            status = _STATUS_OF_MARK[step.group(1)]
            text = step.group(2)
            for suffix in SUFFIXES.values():
                text = text.removesuffix(suffix)
            steps = current()["steps"]
            assert isinstance(steps, list)
            steps.append(PlanStep(text=one_line(text), status=status))
            continue
        field = _FIELD.match(line)
        if field:
            key = field.group(1).strip().casefold()
            if key == "goal":
                current()["goal"] = one_line(field.group(2))
            elif key == "expected output":
                current()["expected_output"] = one_line(field.group(2))
    return tuple(Phase.model_validate({**p, "steps": tuple(p["steps"])}) for p in phases)


def _risks(body: list[str]) -> tuple[Risk, ...]:
    risks: list[Risk] = []
    for line in body:
        risk = _RISK.match(line)
        if risk:
            risks.append(Risk(risk=one_line(risk.group(1))))
            continue
        mitigation = _MITIGATION.match(line)
        if mitigation and risks:
            risks[-1] = risks[-1].model_copy(update={"mitigation": one_line(mitigation.group(1))})
    return tuple(risks)
