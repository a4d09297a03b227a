"""The default harness through the public Agent API and the scripted provider."""

from __future__ import annotations

import logging
from pathlib import Path

from contextengine import Config, ReminderEntry, ScriptedProvider
from contextengine.agent.events import HumanQuestion, MemoryUpdate
from contextengine.agent.hooks import NullHarness
from contextengine.agent.loop import Agent
from contextengine.errors import BadRequestError
from contextengine.memory.reboot import REBOOT_NOTICE, REBOOT_QUESTIONS
from contextengine.session.entries import (
    AssistantEntry,
    NoteEntry,
    ToolResultEntry,
    UserEntry,
)

TAIL_HEADING = "## Task status"
MEMORY_FILES = ("task_plan.md", "findings.md", "progress.md")


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def step(*calls: dict, content: str = "Working.") -> dict:
    return {"content": content, "tool_calls": list(calls)}


def failing_python() -> dict:
    return call("shell_exec", command="python3 -c 'print(undefined_name)'")


def todo(*items: tuple[str, str]) -> dict:
    return call("todo_write", todos=[{"content": c, "status": s} for c, s in items])


def make_agent(tmp_path: Path, script, config: Config | None = None, **kwargs):
    provider = ScriptedProvider(script)
    agent = Agent(
        provider,
        tmp_path / "ws",
        config or Config(overhead_share=None, recite_after_chars=0),
        **kwargs,
    )
    return agent, provider


def entries(agent: Agent, kind: type) -> list:
    return [r.entry for r in agent.session.records if isinstance(r.entry, kind)]


def plan_reminders(agent: Agent) -> list[str]:
    return [e.text.splitlines()[0] for e in entries(agent, ReminderEntry) if e.rule == "plan"]


def main_requests(provider: ScriptedProvider):
    return [r for r in provider.requests if r.purpose == "main"]


def test_memory_files_exist_from_the_start_and_every_change_is_an_event(tmp_path):
    script = [
        step(todo(("Write a.txt", "in_progress"), ("Run python", "pending"))),
        step(call("file_write", path="a.txt", content="hello\n")),
        step(failing_python()),
        step(call("memory_finding_add", title="Python", content="undefined_name is undefined")),
        step(call("shell_exec", command="cat a.txt")),
        {"content": "a.txt holds hello; the python probe failed with a NameError as expected."},
    ]
    agent, _ = make_agent(tmp_path, script)
    for name in MEMORY_FILES:
        assert (agent.session_dir / name).exists()
    assert (agent.session_dir / "findings.md").read_text() == "# Research Findings\n"
    events = list(agent.stream("Write a.txt and probe python."))

    shown = {}
    for event in events:
        if isinstance(event, MemoryUpdate):
            shown[event.file] = event.content
    assert shown == {n: (agent.session_dir / n).read_text() for n in MEMORY_FILES}
    updates = [e.file for e in events if isinstance(e, MemoryUpdate)]
    assert updates[:3] == list(MEMORY_FILES), "the templates are shown first"
    assert updates.count("progress.md") >= 5 + 2, "start, five calls, end"

    progress = (agent.session_dir / "progress.md").read_text()
    for line in (
        "[x] Session Started",
        "[*] Tool Call: todo_write",
        "[*] Tool Call: file_write",
        "[!] ERROR (attempt 1): NameError",
        "[*] Tool Call: memory_finding_add",
        "**Command**: `cat a.txt`",
        "[=] Turn Ended: completed",
    ):
        assert line in progress
    assert "NameError: name 'undefined_name' is not defined" in progress
    # Plain ASCII markers: readable without an emoji font, and cheap in the model's context.
    assert not [ch for ch in progress if ord(ch) >= 0x2600], "no emoji or symbols"
    assert "1. [>] Write a.txt" in (agent.session_dir / "task_plan.md").read_text()
    assert "undefined_name is undefined" in (agent.session_dir / "findings.md").read_text()


def test_third_error_of_a_class_reboots_and_can_hand_over_to_a_human(tmp_path):
    script = [
        step(failing_python()),
        step(failing_python()),
        step(failing_python()),
        {
            "content": "1. Probe python.\n2. Three runs.\n3. The name is undefined.\n4. Define it.\n"
            "5. Yes.\nHUMAN_HELP: yes - Which variable should the script print?"
        },
    ]
    agent, provider = make_agent(tmp_path, script)
    result = agent.run("Probe python.")
    assert result.status == "needs_human"
    assert result.error == "Which variable should the script print?"

    progress = (agent.session_dir / "progress.md").read_text()
    assert "[!] ERROR (attempt 1): NameError" in progress
    assert "[!] ERROR (attempt 2): NameError" in progress
    assert "[!] ERROR (attempt 3): NameError !! 3-STRIKE TRIGGERED" in progress
    assert "**Human help**: yes - Which variable should the script print?" in progress

    reminders = entries(agent, ReminderEntry)
    assert reminders[-1].rule == "3-strike" and reminders[-1].text == REBOOT_NOTICE

    reboot, previous = provider.requests[-1], provider.requests[-2]
    assert reboot.purpose == "reboot" and previous.purpose == "main"
    assert reboot.tools == previous.tools == provider.requests[0].tools
    assert reboot.mask is not None and reboot.mask.allow == ()
    # only the cached head (system prompt and tools) and the self-contained prompt: the
    # reboot reads the plan and the progress log, not the whole history again
    assert reboot.messages[:-1] == previous.messages[:1]
    assert reboot.text().startswith("".join(previous.chunks[:2]))
    prompt = reboot.messages[-1]["content"]
    assert all(q in prompt for q in REBOOT_QUESTIONS)
    assert "HUMAN_HELP: no" in prompt
    assert "### Objective\nProbe python." in prompt
    assert "NameError: name 'undefined_name' is not defined" in prompt


def test_searches_that_find_nothing_are_no_strikes(tmp_path):
    search = call("shell_exec", command="grep -n undefined_name app.py")
    script = [
        step(call("file_write", path="app.py", content="print('hello')\n")),
        *[step(search)] * 4,
        {"content": "Nothing in the tree uses undefined_name; there is nothing to fix."},
    ]
    agent, provider = make_agent(tmp_path, script)
    result = agent.run("Find the uses of undefined_name.")
    assert result.status == "completed"
    assert [r.purpose for r in provider.requests] == ["main"] * 6
    results = entries(agent, ToolResultEntry)[1:]
    assert [(r.status, r.error_class) for r in results] == [("success", None)] * 4
    assert all("[exit code 1]" in r.content for r in results)
    assert "ERROR" not in (agent.session_dir / "progress.md").read_text()


def test_a_human_answer_continues_the_run_and_the_struck_class_starts_over(tmp_path):
    asked = []
    script = [
        step(failing_python()),
        step(failing_python()),
        step(failing_python()),
        {"content": "I keep failing.\nHUMAN_HELP: yes - What should it print?"},
        step(failing_python(), content="Trying once more with the human's hint."),
        {"content": "The script should print a greeting; the human confirmed the plan."},
    ]

    def ask_human(question: str) -> str:
        asked.append(question)
        return "Print 'hello' instead."

    agent, provider = make_agent(tmp_path, script, ask_human=ask_human)
    events = list(agent.stream("Probe python."))
    result = events[-1].result
    assert result.status == "completed"
    assert asked == ["What should it print?"]
    # The question is an event first (the CLI prints it, the web UI draws its card).
    assert [e.question for e in events if isinstance(e, HumanQuestion)] == asked
    assert entries(agent, UserEntry)[-1].text == "Print 'hello' instead."
    assert [r.purpose for r in provider.requests].count("reboot") == 1
    assert (
        "[!] ERROR (attempt 1): NameError"
        in ((agent.session_dir / "progress.md").read_text().split("[~] 5-Question Reboot")[1])
    )


def test_no_human_needed_goes_on_without_asking(tmp_path):
    script = [
        step(failing_python()),
        step(failing_python()),
        step(failing_python()),
        {"content": "I will define the name first.\nHUMAN_HELP: no"},
        {"content": "Defined the name and the probe prints as it should."},
    ]
    agent, provider = make_agent(tmp_path, script, ask_human=lambda q: "unused")
    assert agent.run("Probe python.").status == "completed"
    assert [r.purpose for r in provider.requests] == ["main"] * 3 + ["reboot", "main"]


def test_two_action_rule_reminds_after_two_reads_and_not_again_without_change(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.py").write_text("A = 1\n")
    script = [
        step(call("file_read", path="a.py")),
        step(call("file_grep", pattern="A")),
        step(call("file_write", path="b.py", content="B = 2\n")),
        step(call("file_ls")),
        step(call("memory_finding_add", title="a.py", content="A is 1")),
        step(call("file_glob", pattern="*.py")),
        step(call("shell_exec", command="cat b.py | wc -l")),
        {"content": "a.py sets A = 1 and b.py sets B = 2; findings are recorded."},
    ]
    agent, _ = make_agent(tmp_path, script)
    agent.run("Look around.")
    kinds = []
    for record in agent.session.records:
        entry = record.entry
        if isinstance(entry, ToolResultEntry):
            kinds.append(entry.tool_name)
        elif isinstance(entry, ReminderEntry) and entry.rule == "2-action":
            kinds.append("REMIND")
    assert kinds == [
        "file_read",
        "file_grep",
        "REMIND",
        "file_write",
        "file_ls",
        "memory_finding_add",
        "file_glob",
        "shell_exec",
        "REMIND",
    ]
    texts = {e.text for e in entries(agent, ReminderEntry) if e.rule == "2-action"}
    assert len(texts) == 1, "constant wrapper text"


def test_plan_recitation_at_start_before_shell_and_every_five_calls(tmp_path):
    """An empty plan is never recited into history, and a plan the model writes itself is
    in view already; the tail recites the current plan without being stored: in full
    right after every shell call (R8.2: re-read before the next decision) and every fifth
    iteration, else its focus."""
    script = [
        step(call("file_ls")),
        step(call("shell_exec", command="true")),
        step(todo(("Look", "done"), ("Run", "in_progress"))),
        step(call("shell_exec", command="true")),
        step(call("shell_exec", command="true")),
        step(todo(("Look", "done"), ("Run", "done"), ("Write", "in_progress"))),
        *[step(call("file_write", path=f"f{k}.txt", content="x")) for k in range(12)],
        {"content": "Ran the commands and wrote twelve files as planned."},
    ]
    agent, provider = make_agent(tmp_path, script)
    agent.run("Run things.")
    assert plan_reminders(agent) == []
    requests = main_requests(provider)
    tails = [r.messages[-1]["content"] for r in requests]
    # requests 1, 3 and 4 are answered with shell_exec: the requests after them (2, 4, 5)
    # end with the full status; the others with the focus, in full every fifth iteration
    assert tails[1].endswith("No plan yet.")
    assert "\nMemory files: .contextengine/sessions/" in tails[0], "named at the turn's start"
    assert all("Memory files" not in t for t in tails[1:])
    assert tails[2] == f"{TAIL_HEADING}\nObjective: Run things.\nNo plan yet."
    assert tails[3] == "Focus: step 2", "the model's own todo_write, just before, names it"
    assert (
        tails[4]
        == tails[5]
        == f"{TAIL_HEADING}\nObjective: Run things.\n" + ("[x] 1 Look\n[>] 2 Run\nFocus: step 2")
    ), "unchanged, yet in full after a shell call"
    assert all(t == "Focus: step 3" for t in tails[6:11])
    assert "[x] 2 Run\n[>] 3 Write" in tails[11], "recited in full again five iterations on"

    for request in main_requests(provider):
        assert request.messages[-1]["role"] == "user"
        assert request.messages[-1]["content"].startswith((TAIL_HEADING, "No plan", "Focus:"))
    assert "Objective" not in tails[0], "the task, the message just before, states it"
    assert "Objective: Run things." in tails[11]
    assert main_requests(provider)[-1].messages[-1]["content"] == "Focus: step 3"
    assert TAIL_HEADING not in (agent.session_dir / "session.jsonl").read_text()


def test_reminders_never_split_a_batch_of_calls_from_its_results(tmp_path):
    script = [
        step(failing_python()),
        step(failing_python()),
        step(failing_python(), call("file_read", path="missing.txt"), failing_python()),
        {"content": "Thinking it over.\nHUMAN_HELP: no"},
        {"content": "Stopped probing; the name is undefined in every run."},
    ]
    agent, provider = make_agent(tmp_path, script)
    agent.run("Probe.")
    at = next(k for k, r in enumerate(provider.requests) if r.purpose == "reboot")
    reboot, after = provider.requests[at], provider.requests[at + 1]
    roles = [m["role"] for m in after.messages]
    batch = max(k for k, m in enumerate(after.messages) if len(m.get("tool_calls") or []) == 3)
    assert roles[batch + 1 : batch + 4] == ["tool", "tool", "tool"]
    assert REBOOT_NOTICE in after.messages[batch + 4]["content"]
    assert after.messages[batch + 5]["content"].startswith("Thinking it over.")
    # the questions are asked once, in a request of their own, and never stored
    assert "5-Question Reboot Test\n" in reboot.messages[-1]["content"]
    assert reboot.segments.extra == 1
    assert not any("What is my original goal?" in r.to_json() for r in agent.session.records)


def test_memory_tools_drive_the_tail(tmp_path):
    script = [
        step(
            call("memory_plan_update", goal="Ship the greeting script"),
            todo(("Write it", "in_progress"), ("Test it", "pending")),
        ),
        {"content": "The plan is written down; the greeting comes next."},
    ]
    script[1:1] = [step(call("file_ls")) for _ in range(5)]
    agent, provider = make_agent(tmp_path, script)
    agent.run("Greet.")
    tails = [r.messages[-1]["content"] for r in main_requests(provider)]
    assert tails[1] == "Focus: step 1", "the model has just written the plan"
    assert tails[-1] == (
        f"{TAIL_HEADING}\nObjective: Ship the greeting script\n"
        "[>] 1 Write it\n[ ] 2 Test it\nFocus: step 1"
    ), "recited in full five iterations on"
    assert "memory_plan_update" in provider.requests[0].tool_names


def test_a_resumed_session_keeps_its_counters_and_plan(tmp_path):
    first_script = [
        step(todo(("Probe python", "in_progress"))),
        step(failing_python()),
        step(failing_python()),
        {"content": "Two probes failed; I will continue after the restart."},
    ]
    agent, _ = make_agent(tmp_path, first_script)
    agent.run("Probe python.")
    session_dir = agent.session_dir
    agent.session.close()

    later = ScriptedProvider(
        [
            step(failing_python()),
            {"content": "Same error three times.\nHUMAN_HELP: no"},
            {"content": "The probe fails because undefined_name is never defined."},
        ]
    )
    resumed = Agent.resume(session_dir, later, Config(overhead_share=None, recite_after_chars=0))
    assert resumed.run("Go on.").status == "completed"
    assert [r.purpose for r in later.requests] == ["main", "reboot", "main"]
    assert "[>] 1 Probe python" in later.requests[0].messages[-1]["content"]
    assert "Objective: Probe python." in later.requests[0].messages[-1]["content"]
    progress = (session_dir / "progress.md").read_text()
    assert "[~] Session Resumed" in progress
    assert "[!] ERROR (attempt 3): NameError !! 3-STRIKE TRIGGERED" in progress


def test_lessons_reach_the_next_session_and_a_broken_injector_is_skipped(tmp_path, caplog):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "greet.py").write_text("print(nme)\n")
    first_script = [
        step(call("shell_exec", command="python3 greet.py")),
        step(
            call("file_edit", path="greet.py", old_text="nme", new_text="'hi'"),
            content="Fixing the misspelled name.",
        ),
        step(call("shell_exec", command="python3 greet.py")),
        {"content": "greet.py prints hi after fixing the misspelled name."},
    ]
    agent, _ = make_agent(tmp_path, first_script)
    agent.run("Make greet.py work.")
    root = tmp_path / "ws" / ".contextengine" / "sessions"
    (root / "default" / "default" / "preferences.md").mkdir(parents=True)

    second_script = [
        {"content": "Nothing to do: greet.py already works as the lesson says."},
        {"content": "Still nothing to do: greet.py prints hi."},
    ]
    with caplog.at_level(logging.WARNING):
        second, provider = make_agent(tmp_path, second_script)
        second.run("Check greet.py again.")
        second.run("And once more.")
    notes = entries(second, NoteEntry)
    lessons = [n for n in notes if n.source == "lessons"]
    assert len(lessons) == 1, "the same note is not appended again on the next turn"
    assert "[NameError] shell_exec" in lessons[0].text
    assert (
        "file_edit `greet.py`" in lessons[0].text
        and "Fixing the misspelled name." in lessons[0].text
    )
    first_request = provider.requests[0].messages
    assert any('<context source="lessons">' in m["content"] for m in first_request)
    memory = [n for n in notes if n.source == "long_term_memory"]
    assert memory and "greet.py prints hi" in memory[0].text
    assert "injector preferences failed and was skipped: IsADirectoryError" in caplog.text
    assert "[!] Injector Failed: preferences" in (second.session_dir / "progress.md").read_text()


def test_flags_switch_the_harness_parts_off(tmp_path):
    script = [{"content": "Nothing to do in this workspace today."}]
    quiet, provider = make_agent(
        tmp_path / "a",
        list(script),
        Config(overhead_share=None, recite_after_chars=0, working_memory=False),
    )
    quiet.run("Hello.")
    assert not any((quiet.session_dir / n).exists() for n in MEMORY_FILES)
    assert not any(n.startswith("memory_") for n in provider.requests[0].tool_names)
    assert provider.requests[0].messages[-1]["content"].startswith(TAIL_HEADING)

    off = Config(
        overhead_share=None,
        working_memory=False,
        reminders=False,
        recitation=False,
        injection=False,
    )
    plain, provider = make_agent(tmp_path / "b", list(script), off)
    assert isinstance(plain.harness, NullHarness)
    plain.run("Hello.")
    assert provider.requests[0].messages[-1] == {"content": "Hello.", "role": "user"}
    assert not any(
        isinstance(r.entry, AssistantEntry) and r.entry.tool_calls for r in plain.session.records
    )


def test_the_model_can_read_and_edit_its_memory_files_by_path(tmp_path):
    def script(request):
        if len(main_requests(provider)) == 1:
            plan_path = str((agent.session_dir / "task_plan.md").relative_to(tmp_path / "ws"))
            return step(
                call(
                    "file_edit",
                    path=plan_path,
                    old_text="## Goal\n(not set yet: write it with memory_plan_update)",
                    new_text="## Goal\nEdited by the model",
                ),
            )
        return {"content": "I set the goal by editing task_plan.md directly."}

    provider = ScriptedProvider(script)
    agent = Agent(provider, tmp_path / "ws", Config(overhead_share=None, recite_after_chars=0))
    events = list(agent.stream("Set a goal."))
    plan_updates = [e for e in events if isinstance(e, MemoryUpdate) and e.file == "task_plan.md"]
    assert "Edited by the model" in plan_updates[-1].content
    assert "Objective: Edited by the model" in provider.requests[-1].messages[-1]["content"]


def test_the_tail_lists_unresolved_errors_when_it_recites_in_full(tmp_path):
    script = [
        step(todo(("Probe", "in_progress"))),
        step(failing_python()),
        *[step(call("file_ls")) for _ in range(5)],
        {"content": "The probe fails: undefined_name is not defined anywhere."},
    ]
    agent, provider = make_agent(tmp_path, script)
    agent.run("Probe python.")
    after_shell = main_requests(provider)[2].messages[-1]["content"]
    assert "[>] 1 Probe" in after_shell and "Recent errors (unresolved)" in after_shell
    tail = main_requests(provider)[-1].messages[-1]["content"]
    assert "[>] 1 Probe" in tail, "a full recital five iterations after the last"
    assert tail.endswith("NameError: name 'undefined_name' is not defined")
    assert "\nRecent errors (unresolved):\n- shell_exec python3 -c " in tail

    quiet, provider = make_agent(
        tmp_path / "q",
        list(script),
        Config(overhead_share=None, recite_after_chars=0, max_preserved_errors=0),
    )
    quiet.run("Probe python.")
    assert "Recent errors" not in main_requests(provider)[-1].messages[-1]["content"]


def test_a_plan_finished_before_the_turn_is_not_the_new_turn_plan(tmp_path):
    script = [
        step(todo(("Write a.txt", "done"))),
        {"content": "a.txt is written; the plan's only step is done."},
        step(call("file_ls")),
        step(todo(("Write b.txt", "in_progress"))),
        step(call("file_ls")),
        {"content": "b.txt comes next; the new plan says so."},
    ]
    agent, provider = make_agent(tmp_path, script)
    agent.run("Write a.txt.")
    agent.run("Now write b.txt.")
    tails = [r.messages[-1]["content"] for r in main_requests(provider)]
    assert tails[1] == "Focus: check and report"
    second_turn = tails[2].split("\nMemory files:")[0]
    assert second_turn == f"{TAIL_HEADING}\nNo plan yet.", "the turn's request, just before"
    assert tails[3] == "No plan yet."
    assert tails[4] == "Focus: step 1", "the model's new plan is the turn's plan"


def test_a_task_left_unanswered_stands_before_the_next_request_and_is_not_recited_there(
    tmp_path,
):
    replies = iter(
        [
            BadRequestError("the provider refused it", status=400),
            step(todo(("Fix it", "in_progress"))),
            *[step(call("file_ls")) for _ in range(5)],
            {"content": "Fixed, as the plan said; the listing shows the new file."},
        ]
    )

    def script(request):
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    agent, provider = make_agent(tmp_path, script)
    assert agent.run("Fix the parser.").status == "error"
    assert agent.run("Please go on.").status == "completed"
    first = main_requests(provider)[1]
    users = [m["content"] for m in first.messages if m["role"] == "user"]
    assert users[:2] == ["Fix the parser.", "Please go on."]
    assert "Objective" not in users[-1], "the task stands just before the tail"
    assert users[-1].startswith(f"{TAIL_HEADING}\nNo plan yet.")
    recited = [r.messages[-1]["content"] for r in main_requests(provider)[2:]]
    assert any("Objective: Fix the parser." in t for t in recited), "recited later"
