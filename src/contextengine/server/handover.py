"""The questions a session's agent asked the human, found in its recorded history.

A 3-strike reboot reply (the first assistant entry after the rule's reminder) asks for a
human when its ``HUMAN_HELP`` line says yes; the human's answer is the next user entry,
whether it continued the turn or came as the next message. The web UI redraws these as
question cards after a reload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextengine.memory.reboot import human_help
from contextengine.memory.rules import STRIKE_RULE
from contextengine.session.entries import AssistantEntry, Entry, ReminderEntry, UserEntry


@dataclass(frozen=True)
class HandOver:
    """A question to the human in the reply at ``index``; ``answer`` is ``None`` while open."""

    index: int
    question: str
    answer: str | None


def hand_overs(entries: Sequence[Entry]) -> list[HandOver]:
    """Every question to the human in ``entries``, in order, with its answer if given."""
    found: list[HandOver] = []
    rebooting = False
    for index, entry in enumerate(entries):
        if isinstance(entry, ReminderEntry) and entry.rule == STRIKE_RULE:
            rebooting = True
        elif isinstance(entry, AssistantEntry) and rebooting:
            rebooting = False
            help_ = human_help(entry.text)
            if help_.needed:
                found.append(HandOver(index, help_.question, _answer(entries[index + 1 :])))
    return found


def _answer(later: Sequence[Entry]) -> str | None:
    """The first user entry before the agent replies again."""
    for entry in later:
        if isinstance(entry, UserEntry):
            return entry.text
        if isinstance(entry, AssistantEntry):
            return None
    return None
