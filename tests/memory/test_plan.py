"""The task plan: template, parse/render round trip, updates, todo lists."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine.memory.plan import (
    Phase,
    Plan,
    PlanStep,
    PlanUpdate,
    PlanUpdateError,
    Risk,
    apply_todos,
    apply_update,
    parse_plan,
    render_plan,
)

words = (
    st.text(alphabet="abcdefghij XYZ0123.,:()-_/", min_size=1, max_size=30)
    .map(lambda s: " ".join(s.split()))
    .filter(bool)
)
statuses = st.sampled_from(["pending", "in_progress", "done", "failed"])
steps = st.builds(PlanStep, text=words, status=statuses)
phases = st.builds(
    Phase,
    name=words | st.just(""),
    goal=words | st.just(""),
    steps=st.lists(steps, max_size=4).map(tuple),
    expected_output=words | st.just(""),
)
plans = st.builds(
    Plan,
    title=words | st.just(""),
    goal=words | st.just(""),
    blockers=words | st.just(""),
    phases=st.lists(phases, max_size=3).map(tuple),
    decisions=st.lists(words, max_size=3).map(tuple),
    risks=st.lists(st.builds(Risk, risk=words, mitigation=words | st.just("")), max_size=2).map(
        tuple
    ),
)


@given(plans)
def test_render_then_parse_gives_the_plan_back(plan: Plan) -> None:
    assert parse_plan(render_plan(plan)) == plan


def test_empty_plan_renders_the_seed_template() -> None:
    text = render_plan(Plan())
    for heading in (
        "# Task Plan",
        "## Goal",
        "## Current Status",
        "- Phase:",
        "- Progress:",
        "- Blockers:",
        "## Execution Plan",
        "## Technical Decisions",
        "## Risks & Mitigation",
    ):
        assert heading in text
    assert parse_plan(text) == Plan()


def test_rendered_plan_numbers_steps_across_phases_and_derives_status() -> None:
    plan = Plan(
        title="Auth API",
        goal="Build login",
        phases=(
            Phase(name="Models", steps=(PlanStep(text="User model", status="done"),)),
            Phase(
                name="Routes",
                steps=(
                    PlanStep(text="Login route", status="in_progress"),
                    PlanStep(text="Logout route", status="failed"),
                ),
            ),
        ),
    )
    text = render_plan(plan)
    assert "# Task Plan: Auth API" in text
    assert "1. [x] User model (done)" in text
    assert "2. [>] Login route" in text
    assert "3. [!] Logout route (failed)" in text
    assert "- Phase: Phase 2: Routes" in text
    assert "- Progress: 1/3 steps done, 1 failed" in text


def test_hand_edited_plan_is_read_tolerantly_and_unknown_sections_survive() -> None:
    text = (
        "# Task Plan: Speed up queries\n\n## Goal\nMake the report\nfast.\n\n"
        "## Execution Plan\n- [x] Find slow query\n- [ ] Add an index\n\n"
        "### Phase 2: Verify\n* [>] Measure again\n\n"
        "## Notes\nKeep the old index until Friday.\n"
    )
    plan = parse_plan(text)
    assert plan.title == "Speed up queries"
    assert plan.goal == "Make the report fast."
    assert [(s.text, s.status) for s in plan.steps] == [
        ("Find slow query", "done"),
        ("Add an index", "pending"),
        ("Measure again", "in_progress"),
    ]
    assert plan.phases[1].name == "Verify"
    assert "## Notes\nKeep the old index until Friday." in render_plan(plan)


def test_update_replaces_phases_then_sets_statuses_and_appends() -> None:
    plan = Plan(decisions=("Use SQLite",))
    update = PlanUpdate.model_validate(
        {
            "goal": "Ship\nv2",
            "phases": [{"name": "Build", "steps": [{"content": "a"}, {"content": "b"}]}],
            "step_status": [{"step": 2, "status": "in_progress"}],
            "add_decisions": ["Use FTS5"],
            "add_risks": [{"risk": "lock contention", "mitigation": "busy timeout"}],
            "blockers": "waiting for keys",
        }
    )
    new = apply_update(plan, update)
    assert new.goal == "Ship v2"
    assert [(s.text, s.status) for s in new.steps] == [("a", "pending"), ("b", "in_progress")]
    assert new.decisions == ("Use SQLite", "Use FTS5")
    assert new.risks == (Risk(risk="lock contention", mitigation="busy timeout"),)
    assert new.blockers == "waiting for keys"


def test_update_of_a_missing_step_is_refused_with_the_step_count() -> None:
    plan = Plan(phases=(Phase(steps=(PlanStep(text="only"),)),))
    with pytest.raises(PlanUpdateError, match="step 3 does not exist; the plan has 1 step"):
        apply_update(
            plan, PlanUpdate.model_validate({"step_status": [{"step": 3, "status": "done"}]})
        )


def test_todos_keep_the_phase_of_known_steps_and_new_ones_follow_their_neighbour() -> None:
    plan = Plan(
        phases=(
            Phase(name="A", steps=(PlanStep(text="a1"), PlanStep(text="a2"))),
            Phase(name="B", steps=(PlanStep(text="b1"),)),
            Phase(name="C", steps=(PlanStep(text="c1"),)),
        )
    )
    new = apply_todos(plan, [("a1", "done"), ("b1", "in_progress"), ("b2", "pending")])
    assert [(p.name, [(s.text, s.status) for s in p.steps]) for p in new.phases] == [
        ("A", [("a1", "done")]),
        ("B", [("b1", "in_progress"), ("b2", "pending")]),
    ]


def test_todos_on_an_empty_plan_make_one_phase() -> None:
    new = apply_todos(Plan(goal="g"), [("x", "in_progress"), ("y", "pending")])
    assert len(new.phases) == 1 and [s.text for s in new.steps] == ["x", "y"]
    assert new.goal == "g"
