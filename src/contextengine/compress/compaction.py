"""Round-aligned compaction (R7.4, seed 003 A4-A6, C2, C6, C7, E2): what to archive, and how.

Pure planning: which live records leave the live view, the summary instruction, the
summary's fixed template. With more than ``keep_rounds`` rounds, the cut falls on a round
boundary (a round runs from a user message to the assistant's final answer) and the
newest ``keep_rounds`` rounds stay whole. With no more rounds than that (a coding run is
often one round of 50-150 steps), the cut falls between whole step groups (an assistant
reply with all its tool results, never split): the oldest steps are archived, the newest
steps that fit ``IN_ROUND_KEEP_SHARE`` of the window stay, and every user message stays in
view. Summaries are never archived again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from contextengine.config import Config
from contextengine.session.entries import AssistantEntry, SummaryEntry, UserEntry
from contextengine.session.log import LogRecord

SUMMARY_HEADING = "## 📌 Archived Session Summary"
TIMEOUT_MESSAGE = "Summary generation timed out, keeping recent history only."
# Inside one long round, the newest step groups kept verbatim may fill this share of the
# window (estimated); the rest of the round before them is archived.
IN_ROUND_KEEP_SHARE = 0.3

SUMMARY_TEMPLATE = """\
## 📌 Archived Session Summary
*(Contains context from {start} to {cutoff})*

### 🎯 Objectives & Status
* **Original Goal**: [what the user originally wanted]

### 🏗️ Technical Context (Static)
* **Stack**: [languages, frameworks, versions]
* **Environment**: [OS, shell, key environment variables]

### ✅ Completed Milestones (The "Done" Pile)
* [✓] [completed task 1] - [short result]
* [✓] [completed task 2] - [short result]

### 🧠 Key Insights & Decisions (Persistent Memory)
* **Decisions**: [key technical choices, approaches abandoned]
* **Learnings**: [special configuration, API formats, pitfalls]
* **User Preferences**: [habits the user insisted on]

### 📂 File System State (Snapshot)
*(Modified files in this archive segment)*
* `path/to/file`: [what changed]"""

SUMMARY_PROMPT = """\
The session history above is being compacted to stay inside the context window. Write a \
summary of the ARCHIVED part only: everything from the start of the history up to and \
including the message that begins «{last_removed}». Later messages stay in context \
verbatim, so do not summarize them, and do not describe the current task progress (it is \
kept separately). Keep exact names: file paths, function names, commands, error messages \
and decisions the work depends on. Do not call tools.

Answer with exactly this template, every bracket filled ('none' where nothing applies):

{template}"""


@dataclass(frozen=True)
class CompactionPlan:
    """Live records ``removed`` (indices ``[first_index, end_index)``) leave the live view;
    with scope ``steps`` the user messages in that range stay."""

    first_index: int
    end_index: int
    removed: tuple[LogRecord, ...]
    scope: Literal["rounds", "steps"]


def should_compact(estimate: int, live_messages: int, config: Config) -> bool:
    """The trigger: the next request's tokens ``>= trigger * window``, >= 3 messages.

    ``estimate`` is the last usage plus what is new (R7.4), counted as the agent counts
    it: the request's BPE tokens in the provider's units.
    """
    if not config.flag("compaction") or live_messages < 3:
        return False
    return estimate >= config.compaction_trigger * config.context_window


def plan_compaction(
    live: Sequence[LogRecord], keep_rounds: int, context_window: int
) -> CompactionPlan | None:
    """What to archive now, or ``None`` when nothing can go without breaking the rules."""
    records = [r for r in live if not isinstance(r.entry, SummaryEntry)]
    rounds = _rounds(records)
    if len(rounds) > keep_rounds:
        removed = tuple(r for group in rounds[:-keep_rounds] for r in group)
        return CompactionPlan(removed[0].index, rounds[-keep_rounds][0].index, removed, "rounds")
    groups = [group for records in rounds for group in _step_groups(records)]
    keep_chars = int(IN_ROUND_KEEP_SHARE * context_window * 3)
    kept, size = 0, 0
    for group in reversed(groups):
        size += sum(len(c) for r in group for c in r.chunks)
        if kept and size > keep_chars:
            break
        kept += 1
    if kept >= len(groups):
        return None
    first, end = groups[0][0].index, groups[len(groups) - kept][0].index
    removed = tuple(
        r for r in records if first <= r.index < end and not isinstance(r.entry, UserEntry)
    )
    return CompactionPlan(first, end, removed, "steps")


def summary_instruction(plan: CompactionPlan) -> str:
    """The user message appended to the current request to ask for the summary."""
    last = plan.removed[-1]
    text = next((str(m.get("content") or "") for m in last.messages if m.get("content")), "")
    snippet = " ".join(text.split())[:80] or f"entry {last.index}"
    return SUMMARY_PROMPT.format(last_removed=snippet, template=fill_template(plan))


def fill_template(plan: CompactionPlan) -> str:
    """The fixed template with the archived span's start and cutoff times filled in."""
    start = plan.removed[0].ts or f"entry {plan.first_index}"
    cutoff = plan.removed[-1].ts or f"entry {plan.removed[-1].index}"
    return SUMMARY_TEMPLATE.format(start=start, cutoff=cutoff)


def normalize_summary(answer: str, plan: CompactionPlan) -> str:
    """The model's summary under the fixed heading (added when the model left it out)."""
    body = answer.strip()
    if body.startswith(SUMMARY_HEADING):
        return body
    head = fill_template(plan).split("\n\n", 1)[0]
    return f"{head}\n\n{body}"


def summary_entry(
    plan: CompactionPlan, text: str, archive: str, timed_out: bool = False
) -> SummaryEntry:
    """The one entry that records the compaction and carries its summary."""
    return SummaryEntry(
        text=text,
        archive=archive,
        first_index=plan.first_index,
        end_index=plan.end_index,
        scope=plan.scope,
        timed_out=timed_out,
    )


def _rounds(records: Sequence[LogRecord]) -> list[list[LogRecord]]:
    """Split at user entries; records before the first user entry open the first round."""
    rounds: list[list[LogRecord]] = []
    for record in records:
        if isinstance(record.entry, UserEntry) or not rounds:
            rounds.append([])
        rounds[-1].append(record)
    return rounds


def _step_groups(round_records: Sequence[LogRecord]) -> list[list[LogRecord]]:
    """A round's step groups: each assistant reply with everything up to the next reply.

    The round's opening records (its user message, notes) are not part of any group.
    """
    groups: list[list[LogRecord]] = []
    for record in round_records:
        if isinstance(record.entry, AssistantEntry):
            groups.append([])
        if groups:
            groups[-1].append(record)
    return groups
