"""The reboot prompt, the HUMAN_HELP line, and the task-status tail."""

import pytest

from contextengine.memory.plan import Phase, Plan, PlanStep
from contextengine.memory.reboot import NO_QUESTION, REBOOT_QUESTIONS, human_help, reboot_prompt
from contextengine.memory.status import (
    FULL_EVERY,
    NO_PLAN,
    OBJECTIVE_CHARS,
    REPORT,
    TAIL_STEPS,
    TailRecital,
    objective_of,
    task_status,
)


def test_reboot_prompt_has_the_five_questions_the_plan_and_the_progress_tail() -> None:
    progress = "# Execution Progress Log\n" + "x" * 1000 + "THE END"
    prompt = reboot_prompt(["NameError"], "Ship the demo.", "# Task Plan: demo\n", progress)
    assert [q for q in REBOOT_QUESTIONS if q in prompt] == list(REBOOT_QUESTIONS)
    assert REBOOT_QUESTIONS == (
        "What is my original goal?",
        "What have I tried so far?",
        "What went wrong?",
        "What should I try differently?",
        "Should I ask for human help?",
    )
    assert "# Task Plan: demo" in prompt and "`NameError`" in prompt
    assert "### Objective\nShip the demo." in prompt
    assert progress[-500:] in prompt and progress[-501:] not in prompt
    assert prompt.rstrip().endswith("`HUMAN_HELP: yes - <question for a human>`.")


@pytest.mark.parametrize(
    ("answer", "needed", "question"),
    [
        ("1. ...\n5. No.\nHUMAN_HELP: no", False, ""),
        (
            "5. yes\nHUMAN_HELP: yes - Which Python version do you deploy?",
            True,
            "Which Python version do you deploy?",
        ),
        ("**HUMAN_HELP**: Yes — Where is the API key?", True, "Where is the API key?"),
        ("HUMAN_HELP: yes", True, NO_QUESTION),
        ("HUMAN_HELP: yes - a\nthen I changed my mind\nHUMAN_HELP: no", False, ""),
        ("I will just try again.", False, ""),
    ],
)
def test_human_help_reads_the_last_machine_line(answer: str, needed: bool, question: str) -> None:
    found = human_help(answer)
    assert (found.needed, found.question) == (needed, question)


def test_task_status_lists_steps_marks_failures_and_names_the_focus() -> None:
    plan = Plan(
        goal="Optimize the query",
        phases=(
            Phase(
                steps=(
                    PlanStep(text="Read the slow log", status="done"),
                    PlanStep(text="Try a hint", status="failed"),
                    PlanStep(text="Create an index", status="in_progress"),
                    PlanStep(text="Measure"),
                )
            ),
        ),
    )
    assert task_status(plan, "ignored") == (
        "## Task status\n"
        "Objective: Optimize the query\n"
        "[x] 1 Read the slow log\n"
        "[!] 2 Try a hint\n"
        "[>] 3 Create an index\n"
        "[ ] 4 Measure\n"
        "Focus: step 3"
    )


def test_a_long_plan_lists_the_steps_around_the_focus_and_counts_the_rest() -> None:
    statuses = ["done"] * 48 + ["failed", "in_progress"] + ["pending"] * 70
    steps = tuple(PlanStep(text=f"Port module {k}", status=s) for k, s in enumerate(statuses, 1))
    lines = task_status(Plan(phases=(Phase(steps=steps),)), "Port it").splitlines()
    listed = [line for line in lines if line.startswith("[")]
    assert len(listed) == TAIL_STEPS
    assert listed[0] == "[x] 47 Port module 47" and "[>] 50 Port module 50" in listed
    assert lines[2] == "… steps 1-46: 46 done"
    assert lines[-2] == "… steps 67-120: 54 pending (task_plan.md)"
    assert lines[-1] == "Focus: step 50"
    finished = tuple(PlanStep(text=f"Step {k}", status="done") for k in range(1, 31))
    tail = task_status(Plan(phases=(Phase(steps=finished),)), "Port it").splitlines()
    assert tail[2] == "… steps 1-10: 10 done" and tail[-2] == "[x] 30 Step 30"


def test_task_status_falls_back_to_the_first_user_message() -> None:
    text = task_status(Plan(), "Fix @a.py\n\n<system-reminder>\nread it\n</system-reminder>")
    assert "Objective: Fix @a.py\n" in text
    assert text.endswith("No plan yet.")


def test_the_tail_recites_in_full_when_it_changed_and_a_plan_every_few_iterations() -> None:
    recital = TailRecital()
    empty = Plan()
    tails = [recital.tail(empty, "Fix the bug.", n) for n in range(3 * FULL_EVERY)]
    assert tails[0].startswith("## Task status\nObjective: Fix the bug.")
    assert tails[1:] == [NO_PLAN] * (3 * FULL_EVERY - 1), "no plan: nothing to recite again"

    plan = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Look", status="in_progress"),)),))
    tails = [recital.tail(plan, "Fix the bug.", n) for n in range(FULL_EVERY + 1)]
    assert "[>] 1 Look" in tails[0], "the plan changed"
    assert tails[1] == "Focus: step 1", "the step's text was in the recital just before"
    assert "[>] 1 Look" in tails[FULL_EVERY], "the plan is recited again (R8.2)"


def test_a_full_recital_lists_the_recent_errors_and_a_brief_one_does_not() -> None:
    recital = TailRecital()
    plan = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="in_progress"),)),))
    errors = ["shell_exec make: exit code 2", "file_read a.txt: not found"]
    full = recital.tail(plan, "Build it.", 0, errors)
    assert full.endswith(
        "\nRecent errors (unresolved):\n- shell_exec make: exit code 2\n- file_read a.txt: not found"
    )
    assert recital.tail(plan, "Build it.", 1, errors) == "Focus: step 1"
    assert "Recent errors" not in recital.tail(plan, "Build it.", FULL_EVERY, [])


def test_a_plan_the_model_just_wrote_is_not_recited_back_in_full() -> None:
    recital = TailRecital()
    assert recital.tail(Plan(), "Build it.", 0).startswith("## Task status")
    plan = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="in_progress"),)),))
    assert recital.tail(plan, "Build it.", 1, just_written=True) == "Focus: step 1"
    assert recital.tail(plan, "Build it.", 2) == "Focus: step 1"
    assert "[>] 1 Run" in recital.tail(plan, "Build it.", 1 + FULL_EVERY), "periodic (R8.2)"


def test_a_turn_recites_the_unchanged_status_only_when_it_was_not_recited_lately() -> None:
    recital = TailRecital()
    first = recital.tail(Plan(), "Chat.", 0, where="ws/s1")
    assert first.startswith("## Task status\nObjective: Chat.")
    assert first.endswith("\nMemory files: ws/s1/ task_plan.md, findings.md, progress.md.")
    recital.new_turn()
    assert recital.tail(Plan(), "Chat.", 1, where="ws/s1") == NO_PLAN, "recited a call ago"
    recital.new_turn()
    later = recital.tail(Plan(), "Chat.", 1 + FULL_EVERY, where="ws/s1")
    assert later == first, "a turn long after the last recital recites it, folder and all"
    assert recital.tail(Plan(), "Chat.", 1 + FULL_EVERY, where="ws/s1") == later, "a rebuild"
    assert recital.tail(Plan(), "Chat.", 2 + FULL_EVERY, where="ws/s1") == NO_PLAN
    recital.new_turn()
    changed = recital.tail(Plan(), "Chat more.", 3 + FULL_EVERY, where="ws/s1")
    assert changed.startswith("## Task status\nObjective: Chat more.")
    assert "Memory files" not in changed, "a change is recited; the folder was named lately"


def test_a_session_that_cannot_plan_is_told_its_status_only_when_it_changes() -> None:
    recital = TailRecital(plannable=False)
    first = recital.tail(Plan(), "Chat.", 0, where="ws/s1")
    assert first == (
        "## Task status\nObjective: Chat.\nMemory files: ws/s1/ task_plan.md, findings.md, progress.md."
    ), "no 'No plan yet.': no call of the session could write one"
    assert [recital.tail(Plan(), "Chat.", n) for n in range(1, 3 * FULL_EVERY)] == [None] * (
        3 * FULL_EVERY - 1
    )
    recital.new_turn()
    assert recital.tail(Plan(), "Chat.", 3 * FULL_EVERY) is None, "a turn: nothing new"
    goal = recital.tail(Plan(goal="Ship it."), "Chat.", 3 * FULL_EVERY + 1) or ""
    assert goal.startswith("## Task status\nObjective: Ship it."), "a new goal is a change"

    plan = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="in_progress"),)),))
    assert "[>] 1 Run" in (recital.tail(plan, "Chat.", 3 * FULL_EVERY + 2) or "")
    assert recital.tail(plan, "Chat.", 3 * FULL_EVERY + 3) == "Focus: step 1", (
        "a plan written anyway (a recorded todo call) is recited as usual"
    )


def test_a_finished_plan_is_not_recited_every_few_iterations() -> None:
    recital = TailRecital()
    done = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="done"),)),))
    tails = [recital.tail(done, "Build it.", n) for n in range(2 * FULL_EVERY)]
    assert "Focus: all steps done; check and report" in (tails[0] or "")
    assert tails[1:] == ["Focus: check and report"] * (2 * FULL_EVERY - 1)


def test_a_long_objective_is_cut_to_its_first_words() -> None:
    objective = objective_of("Port the parser to the new grammar, " * 10)
    assert len(objective) == OBJECTIVE_CHARS and objective.endswith("…")
    assert objective.startswith("Port the parser to the new grammar, Port")


def test_the_objective_of_a_benchmark_prompt_is_its_task_element() -> None:
    prompt = (
        "<uploaded_files>\n/workspace/astropy__astropy__4.3\n</uploaded_files>\nI've uploaded"
        " a python code repository. Consider the following PR description:\n\n"
        "<pr_description>\nTimeSeries: misleading exception when required column check fails."
        "\n</pr_description>\n\nCan you help me implement the necessary changes?"
    )
    assert objective_of(prompt) == (
        "TimeSeries: misleading exception when required column check fails."
    )
    assert objective_of(prompt[:200]) == "TimeSeries: misleading exception wh", "cut short"
    assert objective_of("Fix <task></task> parsing.") == "Fix <task></task> parsing."


def test_in_view_the_tail_is_the_focus_and_after_a_high_risk_call_the_status() -> None:
    """A short history holds the objective, the plan call and the errors in view: no
    full status is due but after a high-risk call (R8.2), without the errors block; once
    out of view, the full
    status comes when it is due (here: the memory folder was never named)."""
    recital = TailRecital()
    assert recital.tail(Plan(), "Build it.", 0, where="ws/s1", in_view=True) == NO_PLAN
    plan = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="in_progress"),)),))
    errors = ["shell_exec make: exit code 2"]
    assert recital.tail(plan, "Build it.", 1, errors, in_view=True) == "Focus: step 1"
    after_risk = recital.tail(plan, "Build it.", 2, errors, high_risk=True, in_view=True)
    assert after_risk == "## Task status\nObjective: Build it.\n[>] 1 Run\nFocus: step 1"
    assert recital.tail(plan, "Build it.", 3 + FULL_EVERY, in_view=True) == "Focus: step 1"
    done = Plan(phases=(Phase(name="P", steps=(PlanStep(text="Run", status="done"),)),))
    assert recital.tail(done, "Build it.", 9 + FULL_EVERY, in_view=True) == REPORT
    out = recital.tail(done, "Build it.", 10 + FULL_EVERY, where="ws/s1")
    assert out.startswith("## Task status\nObjective: Build it.\n[x] 1 Run")
    assert out.endswith("Memory files: ws/s1/ task_plan.md, findings.md, progress.md.")


def test_a_status_said_in_view_is_not_recited_when_the_history_grows_past_it() -> None:
    """What was in view counts as recited: a session that cannot plan, whose status never
    changed, gets no recital of its objective once the history is long (as before)."""
    recital = TailRecital(plannable=False)
    assert recital.tail(Plan(), "Fix it.", 0, in_view=True) is None
    assert recital.tail(Plan(), "Fix it.", 3, in_view=True) is None
    assert recital.tail(Plan(), "Fix it.", 12) is None
    assert recital.tail(Plan(), "Fix it.", 13, ["shell_exec x: exit code 1"]) is None
