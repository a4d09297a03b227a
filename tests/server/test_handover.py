"""The questions to the human found in a recorded history (redrawn as cards after a reload)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.memory.rules import STRIKE_RULE
from contextengine.server.handover import HandOver, hand_overs
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    NoteEntry,
    ReminderEntry,
    UserEntry,
)

QUESTION = "Which variable should the script print?"
ASKS = f"1. a\n2. b\n3. c\n4. d\n5. Yes.\nHUMAN_HELP: yes - {QUESTION}"
STRIKE = ReminderEntry(rule=STRIKE_RULE, text="Stop and answer the reboot test.")


def failing_step() -> dict[str, Any]:
    command = "python3 -c 'print(undefined_name)'"
    return {
        "content": "Trying.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}],
    }


def test_the_history_endpoint_lists_an_unanswered_hand_over(
    client: httpx.Client, workspace: Path
) -> None:
    script = [failing_step(), failing_step(), failing_step(), {"content": ASKS}]
    agent = Agent(ScriptedProvider(script), workspace, Config())
    assert agent.run("Probe python.").status == "needs_human"
    agent.close()
    body = client.get(f"/api/sessions/{agent.session.id}/history").json()
    last = len(body["entries"]) - 1
    assert body["entries"][last]["text"] == ASKS
    assert body["questions"] == [{"index": last, "question": QUESTION, "answer": None}]


def test_the_answer_is_the_next_user_entry_before_the_agent_replies() -> None:
    entries: list[Entry] = [
        UserEntry(text="Probe python."),
        STRIKE,
        NoteEntry(source="lessons", text="a note between"),
        AssistantEntry(text=ASKS),
        UserEntry(text="Print the name variable."),
        AssistantEntry(text="Fixed."),
    ]
    assert hand_overs(entries) == [HandOver(3, QUESTION, "Print the name variable.")]


def test_only_a_reboot_reply_that_says_yes_asks() -> None:
    entries: list[Entry] = [
        UserEntry(text="Quote the protocol."),
        AssistantEntry(text=ASKS),  # not a reboot reply: no strike before it
        STRIKE,
        AssistantEntry(text="1. a\n5. No.\nHUMAN_HELP: no"),
        AssistantEntry(text=ASKS),  # the reboot reply was the one before
    ]
    assert hand_overs(entries) == []


def test_a_question_the_agent_moved_past_stays_unanswered() -> None:
    entries: list[Entry] = [STRIKE, AssistantEntry(text=ASKS), AssistantEntry(text="Going on.")]
    entries.append(UserEntry(text="Late reply."))
    assert hand_overs(entries) == [HandOver(1, QUESTION, None)]
