"""The behaviour rules of working memory (R4.3, R8.2, R8.3, R8.5) as a fold over the log.

``RuleState.observe`` is fed every record of the session log in order, so the counters
after a restart are exactly those before it (R8.6): nothing is kept that the log does not
say. The reminders it asks for use constant wrapper text, so the same reminder is the
same bytes, and none repeats while nothing changed:

* plan recitation: due only when the plan file is not in view (never recited, or
  compacted away): it is written into history then, with where the memory files are. The
  plan's current steps are recited by the task-status tail, which ends every request
  (R4.2) and so stands before every high-risk call the model decides on and every fifth
  iteration (R8.2) without being stored: a recital in history would be paid again on
  every later request;
* 2-action rule: due after ``INFO_ACTIONS_PER_FINDING`` information-gathering actions
  with no finding recorded; once given, it is not repeated until a finding is recorded or
  a new user turn begins;
* 3-strike: an error class reaching ``STRIKES`` failures (tool errors only) since its
  last reboot. A reboot resets the classes that triggered it, so three *more* failures
  of that class trigger the next one; success does not reset a count (R5.3 counts errors,
  not streaks).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from contextengine.memory.status import MEMORY_NAMES
from contextengine.session.entries import (
    AssistantEntry,
    ErrorEntry,
    NoteEntry,
    ReminderEntry,
    SummaryEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.session.log import LogRecord
from contextengine.text import clip
from contextengine.toolkit.command_line import simple_commands
from contextengine.toolkit.traits import UNDECLARED, ToolTraits
from contextengine.untrusted import JSONObject

INFO_ACTIONS_PER_FINDING = 2
STRIKES = 3
STRUCK_LOOP_ERRORS = frozenset({"invalid_reply"})
"""The loop's own error classes that count as strikes, as tool error classes do."""

PLAN_RULE = "plan"
TWO_ACTION_RULE = "2-action"
STRIKE_RULE = "3-strike"

RecitationReason = Literal["session start", "high-risk tool", "periodic"]

_INSPECT_COMMANDS = frozenset(
    {
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "find",
        "ls",
        "tree",
        "wc",
        "file",
        "stat",
        "du",
        "df",
        "pwd",
        "which",
        "whereis",
        "type",
        "env",
        "printenv",
        "diff",
        "cmp",
        "nl",
        "sort",
        "uniq",
        "cut",
        "jq",
    }
)
_INSPECT_GIT = frozenset({"log", "show", "diff", "status", "blame", "grep", "ls-files", "branch"})

TWO_ACTION_TEXT = "2-action rule: record what your last two reads taught you (memory_finding_add)."
TWO_ACTION_FILE_TEXT = "2-action rule: record what your last two reads taught you in findings.md."
"""The reminder of a session without ``memory_finding_add``: a tool it lacks is not named."""
_PLAN_OPEN = "<task_plan>"
_PLAN_CLOSE = "</task_plan>"


def plan_reminder_text(reason: RecitationReason, plan_text: str, where: str) -> str:
    """The plan-recitation reminder: a constant sentence per reason, where the memory
    files are, then the plan."""
    intro = {
        "session start": "Plan recitation (session start): read your plan before you begin.",
        "high-risk tool": "Plan recitation (high-risk action): check that it fits the plan.",
        "periodic": "Plan recitation (periodic): check that your work still follows the plan.",
    }[reason]
    files = f"Memory files: {where}/ {MEMORY_NAMES}"
    return f"{intro}\n{files}\n{_PLAN_OPEN}\n{plan_text.rstrip()}\n{_PLAN_CLOSE}"


def is_info_gathering(traits: ToolTraits, arguments: JSONObject) -> bool:
    """Reads, searches, listings, and commands that only inspect."""
    if traits.category == "read":
        return True
    command = arguments.get(traits.action_key) if traits.action_key else None
    return traits.category == "exec" and isinstance(command, str) and is_inspection(command)


def is_inspection(command: str) -> bool:
    """Whether every part of a shell command line only reads (no redirect into a file)."""
    if ">" in command.replace("2>&1", "").replace(">/dev/null", "").replace("> /dev/null", ""):
        return False
    commands = simple_commands(command)
    if not commands:
        return False
    for words in commands:
        program = words[0]
        if program == "cd":
            continue
        if program == "git":
            if len(words) < 2 or words[1] not in _INSPECT_GIT:
                return False
        elif program == "sed":
            if "-n" not in words or any(w.startswith("-i") for w in words):
                return False
        elif program not in _INSPECT_COMMANDS:
            return False
    return True


def is_high_risk(traits: ToolTraits, target_exists: bool) -> bool:
    """Tools declared high-risk (commands, deletions), and writes over an existing file."""
    return traits.risk == "high" or (traits.risk == "overwrite" and target_exists)


MAX_RECENT_ERRORS = 50  # kept in the state; the tail shows max_preserved_errors of them
ERROR_LINE_CHARS = 100
# what a shell observation wraps its output in: <stderr>, </stderr>, [exit code 1]
_WRAPPER_LINE = re.compile(r"^(?:</?[a-z_]+>|\[exit code -?\d+\])$")


@dataclass(frozen=True)
class RecentError:
    """An error not resolved yet: the tool, what it acted on, the first line of its text."""

    tool: str
    action: str
    line: str

    def __str__(self) -> str:
        return f"{self.tool}{f' {self.action}' if self.action else ''}: {self.line}"


def _action_of(traits: ToolTraits, arguments: JSONObject) -> str:
    """What a call acted on, in one line: its command or path, clipped."""
    value = arguments.get(traits.action_key or "path")
    return clip(" ".join(value.split()), 60) if isinstance(value, str) else ""


def _error_line(content: str) -> str:
    """The telling line of an error observation: its first line of text, or a traceback's
    last (the exception); from the message when history keeps the compressed JSON form."""
    try:
        message = json.loads(content)["error"]["message"]
    except (ValueError, TypeError, KeyError):
        message = content
    text = message if isinstance(message, str) else content
    lines = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not _WRAPPER_LINE.match(line.strip())
    ]
    if not lines:
        return ""
    traceback = any(line.startswith("Traceback (most recent call last)") for line in lines)
    return clip(lines[-1] if traceback else lines[0], ERROR_LINE_CHARS)


@dataclass
class RuleState:
    """Counters of one session, folded from its log records; ``traits`` says what each
    tool (by name) declares, as ``Toolset.traits`` does."""

    traits: Callable[[str], ToolTraits] = field(default=lambda _: UNDECLARED, repr=False)
    iterations: int = 0
    strikes: Counter[str] = field(default_factory=Counter)
    other_errors: Counter[str] = field(default_factory=Counter)
    info_actions: int = 0
    two_action_given: bool = False
    plan_in_view: bool = False
    plan_just_written: bool = False  # the last reply's own plan call wrote the plan
    awaiting_reboot: bool = False
    first_user_text: str | None = None
    unanswered: list[str] = field(default_factory=list)  # user texts since the last reply
    open_calls: dict[str, ToolCallRecord] = field(default_factory=dict)
    recent_errors: list[RecentError] = field(default_factory=list)
    notes: set[tuple[str, str]] = field(default_factory=set)
    history_chars: int = 0  # the rendered size of the history in view
    _sizes: dict[int, int] = field(default_factory=dict, repr=False)  # record index -> size

    def observe(self, record: LogRecord) -> None:
        """Fold one appended record into the counters."""
        entry = record.entry
        self._measure(record)
        if isinstance(entry, UserEntry):
            if self.first_user_text is None:
                self.first_user_text = entry.text
            self.unanswered.append(entry.text)
            self.two_action_given = False
            self.plan_just_written = False  # the user spoke last
        elif isinstance(entry, AssistantEntry):
            self.iterations += 1
            self.unanswered = []
            self.awaiting_reboot = False
            self.plan_just_written = False
            self.open_calls = {c.id: c for c in entry.tool_calls}
        elif isinstance(entry, ToolResultEntry):
            self._tool_result(entry)
        elif isinstance(entry, ErrorEntry):
            self.other_errors[entry.error_class] += 1
            if entry.error_class in STRUCK_LOOP_ERRORS:
                self.strikes[entry.error_class] += 1
        elif isinstance(entry, NoteEntry):
            self.notes.add((entry.source, entry.text))
        elif isinstance(entry, ReminderEntry):
            self._reminder(entry)
        elif isinstance(entry, SummaryEntry):
            # What compaction archived is out of sight: let the plan and notes come back.
            self.plan_in_view = False
            self.notes.clear()

    def _measure(self, record: LogRecord) -> None:
        """Grow ``history_chars`` by the record's rendering as the model sees it; a
        compaction's summary takes the place of the records it archives (and of the
        earlier summaries it absorbs). A pruned result is still counted whole: the
        history is taken for longer than it is, so the status is recited sooner."""
        entry = record.entry
        if isinstance(entry, SummaryEntry):
            for index in (*range(entry.first_index, entry.end_index), *entry.absorbs):
                self.history_chars -= self._sizes.pop(index, 0)
        size = sum(len(chunk) for chunk in record.chunks)
        self._sizes[record.index] = size
        self.history_chars += size

    def _tool_result(self, entry: ToolResultEntry) -> None:
        call = self.open_calls.pop(entry.call_id, None)
        traits = self.traits(entry.tool_name)
        arguments = call.as_call().arguments_or_empty() if call is not None else {}
        action = _action_of(traits, arguments)
        if entry.status == "error":
            if entry.error_class:
                self.strikes[entry.error_class] += 1
            error = RecentError(entry.tool_name, action, _error_line(entry.content))
            self.recent_errors = [*self.recent_errors[1 - MAX_RECENT_ERRORS :], error]
            return
        # the same action succeeding resolves its earlier errors (seed 001 resolveError)
        self.recent_errors = [
            e for e in self.recent_errors if (e.tool, e.action) != (entry.tool_name, action)
        ]
        if traits.category == "plan":
            self.plan_in_view = self.plan_just_written = True  # its own call is in history
        if traits.category == "memory":
            self.info_actions = 0
            self.two_action_given = False
            return
        if is_info_gathering(traits, arguments):
            self.info_actions += 1

    def _reminder(self, entry: ReminderEntry) -> None:
        if entry.rule == TWO_ACTION_RULE:
            self.info_actions = 0
            self.two_action_given = True
        elif entry.rule == PLAN_RULE:
            self.plan_in_view = True
        elif entry.rule == STRIKE_RULE:
            for name in self.struck():
                del self.strikes[name]
            self.awaiting_reboot = True

    @property
    def batch_done(self) -> bool:
        """Whether every tool call of the last assistant reply has its result."""
        return not self.open_calls

    def struck(self) -> list[str]:
        """Error classes at or over the strike limit, most failures first."""
        return [name for name, n in self.strikes.most_common() if n >= STRIKES]

    def plan_due(self) -> bool:
        """Whether the plan file must be recited into history (see the module docstring)."""
        return not self.awaiting_reboot and not self.plan_in_view

    def two_action_due(self) -> bool:
        """Whether the 2-action reminder is due."""
        return (
            not self.awaiting_reboot
            and not self.two_action_given
            and self.info_actions >= INFO_ACTIONS_PER_FINDING
        )
