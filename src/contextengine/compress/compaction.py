"""Round-aligned compaction (R7.4, seed 003 A4-A6, C2, C6, C7, E2): what to archive, and how.

Pure planning: which live records leave the live view, the summary instruction, the
summary's fixed template. With more than ``keep_rounds`` rounds, the cut falls on a round
boundary (a round runs from a user message to the assistant's final answer) and the
newest ``keep_rounds`` rounds stay whole. With no more rounds than that (a coding run is
often one round of 50-150 steps), the cut falls between whole step groups (an assistant
reply with all its tool results, never split): the oldest steps are archived, the newest
steps that fit ``IN_ROUND_KEEP_SHARE`` of the window stay, and the user messages stay in
view, newest first, as many as leave room for the newest step; the oldest of those that do
not fit leave with their rounds' steps (long pasted messages must not outgrow the window).

The kept part never exceeds the room the caller gives (``keep_tokens``: what the window
leaves below the trigger after the fixed prefix and the new summary), so a compaction
always makes room: fewer rounds are kept when the newest ``keep_rounds`` would not fit,
and a cut between step groups is made when not even the newest round fits.

A summary is not re-summarized: the new one absorbs every earlier summary in view (a
rolling summary), which leaves the live view with it, so one summary at most is in view
and the request stays bounded for any number of rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from contextengine.context.tokens import count_tokens, cut_at_line
from contextengine.session.entries import AssistantEntry, SummaryEntry, UserEntry
from contextengine.session.log import LogRecord

SUMMARY_HEADING = "## 📌 Archived Session Summary"
TIMEOUT_MESSAGE = "Summary generation timed out, keeping recent history only."
# Inside one long round, the newest step groups kept verbatim may fill this share of the
# window (estimated); the rest of the round before them is archived.
IN_ROUND_KEEP_SHARE = 0.2
# Room set aside for the new summary: this share of the window, at most SUMMARY_MAX_TOKENS;
# the summary instruction asks the model to stay within it.
SUMMARY_SHARE = 0.1
SUMMARY_MAX_TOKENS = 2_000

# A summary may overrun the tokens it was asked to stay within by this factor; beyond it,
# its last lines are cut (the archive keeps every archived step verbatim anyway).
SUMMARY_OVERRUN = 1.5
SUMMARY_CUT = "[… the rest of this summary was cut: it overran its {limit:,}-token budget]"

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
and decisions the work depends on. Stay under {limit} tokens. Do not call tools.{absorb}

Answer with exactly this template, every bracket filled ('none' where nothing applies):

{template}"""

ABSORB_PROMPT = """

The earlier Archived Session Summary above is replaced by yours: carry over everything in \
it that still matters (the goal, milestones, decisions, file state) and merge in the newly \
archived messages, so that nothing it records is lost."""

RecordSize = Callable[[LogRecord], int]


def record_tokens(record: LogRecord) -> int:
    """BPE tokens of a record's rendered messages."""
    return sum(count_tokens(chunk) for chunk in record.chunks)


@dataclass(frozen=True)
class CompactionPlan:
    """Live records ``removed`` (indices ``[first_index, end_index)``) leave the live view;
    with scope ``steps`` the user messages in that range from index ``users_from`` on stay.
    The earlier summaries in view (``absorbed``) leave with them: the new summary carries
    their content."""

    first_index: int
    end_index: int
    removed: tuple[LogRecord, ...]
    scope: Literal["rounds", "steps"]
    absorbed: tuple[LogRecord, ...] = ()
    users_from: int = 0


@dataclass(frozen=True)
class CompactionSettings:
    """Compaction's settings (``Config`` fields of the same names)."""

    compaction: bool = True
    context_window: int = 200_000
    compaction_trigger: float = 0.8
    keep_rounds: int = 10
    summary_timeout_s: float = 120.0


def should_compact(estimate: int, live_messages: int, config: CompactionSettings) -> bool:
    """The trigger: the next request's tokens ``>= trigger * window``, >= 3 messages.

    ``estimate`` is the last usage plus what is new (R7.4), counted as the agent counts
    it: the request's BPE tokens in the provider's units.
    """
    if not config.compaction or live_messages < 3:
        return False
    return estimate >= config.compaction_trigger * config.context_window


def summary_tokens(context_window: int) -> int:
    """Tokens set aside for the new summary (the instruction asks to stay within them)."""
    return min(SUMMARY_MAX_TOKENS, int(SUMMARY_SHARE * context_window))


def keep_room(config: CompactionSettings, fixed_tokens: int, absorbed_tokens: int = 0) -> int:
    """Tokens the kept records may take so that the request after compaction stays below
    the trigger: the trigger's share of the window, less the parts that are not records
    (``fixed_tokens``: L1, L2, tail ...) and the new summary.

    ``absorbed_tokens`` (the earlier summaries) stand in for the new summary when larger.
    """
    summary = max(summary_tokens(config.context_window), absorbed_tokens)
    return int(config.compaction_trigger * config.context_window) - fixed_tokens - summary


def plan_compaction(
    live: Sequence[LogRecord],
    keep_rounds: int,
    context_window: int,
    keep_tokens: int | None = None,
    size: RecordSize = record_tokens,
    *,
    turn_open: bool = True,
) -> CompactionPlan | None:
    """What to archive now, or ``None`` when nothing can go without breaking the rules.

    The kept records take at most ``keep_tokens`` (measured with ``size``; no limit when
    ``None``): fewer than ``keep_rounds`` rounds are kept when those would not fit, and
    when not even the newest round fits, the cut falls between step groups. The newest
    step group always stays, and while a turn is under way (``turn_open``) so does the
    user message of its round, the newest.
    """
    absorbed = tuple(r for r in live if isinstance(r.entry, SummaryEntry))
    records = [r for r in live if not isinstance(r.entry, SummaryEntry)]
    if not records:
        return None
    sizes = {r.index: size(r) for r in records}
    room = keep_tokens if keep_tokens is not None else sum(sizes.values())
    rounds = _rounds(records)
    if len(rounds) > keep_rounds:
        kept_rounds = _rounds_that_fit(rounds, keep_rounds, sizes, room)
        if kept_rounds:
            removed = tuple(r for group in rounds[:-kept_rounds] for r in group)
            end = rounds[-kept_rounds][0].index
            return CompactionPlan(removed[0].index, end, removed, "rounds", absorbed)
    groups = [group for records in rounds for group in _step_groups(records)]
    staying, users_from = _openings_kept(rounds, groups, sizes, room, turn_open)
    if not turn_open and users_from > rounds[-1][0].index:
        # Between turns, not even the newest round fits beside the next message: all goes.
        return CompactionPlan(
            records[0].index, records[-1].index + 1, tuple(records), "rounds", absorbed
        )
    keep = min(int(IN_ROUND_KEEP_SHARE * context_window), room - staying)
    kept = _groups_kept(groups, sizes, keep, users_from)
    if kept < len(groups):
        end = groups[len(groups) - kept][0].index
    elif users_from:
        end = users_from  # every step stays; only old openings go
    else:
        return None
    first = records[0].index if users_from else groups[0][0].index
    staying_users = {
        r.index for r in records if isinstance(r.entry, UserEntry) and r.index >= users_from
    }
    removed = tuple(r for r in records if first <= r.index < end and r.index not in staying_users)
    return CompactionPlan(first, end, removed, "steps", absorbed, users_from)


def _rounds_that_fit(
    rounds: Sequence[Sequence[LogRecord]], keep_rounds: int, sizes: dict[int, int], room: int
) -> int:
    """How many of the newest rounds stay: ``keep_rounds``, fewer while they exceed ``room``."""
    kept_rounds = keep_rounds
    while kept_rounds and sum(sizes[r.index] for g in rounds[-kept_rounds:] for r in g) > room:
        kept_rounds -= 1
    return kept_rounds


def _openings_kept(
    rounds: Sequence[Sequence[LogRecord]],
    groups: Sequence[Sequence[LogRecord]],
    sizes: dict[int, int],
    room: int,
    turn_open: bool,
) -> tuple[int, int]:
    """The tokens of the round openings (user messages) a step cut leaves in view, and the
    index from which they stay: newest first, while they leave room for the newest step;
    the round under way keeps its own."""
    in_groups = {r.index for group in groups for r in group}
    newest = sum(sizes[r.index] for r in groups[-1]) if groups else 0
    staying, users_from = 0, 0
    for k in range(len(rounds) - 1, -1, -1):
        opening = sum(sizes[r.index] for r in rounds[k] if r.index not in in_groups)
        if staying + opening + newest > room and (not turn_open or k < len(rounds) - 1):
            users_from = rounds[k + 1][0].index if k + 1 < len(rounds) else rounds[-1][-1].index + 1
            break
        staying += opening
    return staying, users_from


def _groups_kept(
    groups: Sequence[Sequence[LogRecord]], sizes: dict[int, int], keep: int, users_from: int
) -> int:
    """How many of the newest step groups stay: the newest always, then older ones while
    they fit ``keep`` and are not older than the first opening kept (``users_from``)."""
    kept, total = 0, 0
    for group in reversed(groups):
        total += sum(sizes[r.index] for r in group)
        if kept and (total > keep or group[0].index < users_from):
            break
        kept += 1
    return kept


def summary_instruction(plan: CompactionPlan, limit_tokens: int) -> str:
    """The user message appended to the current request to ask for the summary; when
    earlier summaries are in view, it asks to fold them into the new one."""
    last = plan.removed[-1]
    text = next((str(m.get("content") or "") for m in last.messages if m.get("content")), "")
    snippet = " ".join(text.split())[:80] or f"entry {last.index}"
    return SUMMARY_PROMPT.format(
        last_removed=snippet,
        limit=limit_tokens,
        absorb=ABSORB_PROMPT if plan.absorbed else "",
        template=fill_template(plan),
    )


def fill_template(plan: CompactionPlan) -> str:
    """The fixed template with the archived span's start and cutoff times filled in (from
    the session start when it absorbs earlier summaries)."""
    start = _span_start(plan)
    cutoff = plan.removed[-1].ts or f"entry {plan.removed[-1].index}"
    return SUMMARY_TEMPLATE.format(start=start, cutoff=cutoff)


def normalize_summary(answer: str, plan: CompactionPlan) -> str:
    """The model's summary under the fixed heading (added when the model left it out)."""
    body = answer.strip()
    if body.startswith(SUMMARY_HEADING):
        return body
    head = fill_template(plan).split("\n\n", 1)[0]
    return f"{head}\n\n{body}"


def clip_summary(text: str, limit_tokens: int, size: Callable[[str], int]) -> str:
    """``text`` as is when it stays within ``SUMMARY_OVERRUN`` times ``limit_tokens`` (as
    ``size`` counts), else its first whole lines that do and a line saying the rest was cut:
    a model that ignores the budget must not push the requests after it out of the window."""
    budget = int(SUMMARY_OVERRUN * limit_tokens)
    if size(text) <= budget:
        return text
    return cut_at_line(text, budget, SUMMARY_CUT.format(limit=limit_tokens), size)


def fallback_text(message: str, plan: CompactionPlan) -> str:
    """A failed compaction's summary text: the failure line, then what the absorbed
    summaries said (their content stays in view; earlier failure lines are dropped)."""
    carried = [_carried(r.entry) for r in plan.absorbed if isinstance(r.entry, SummaryEntry)]
    return "\n\n".join([message, *(c for c in carried if c)])


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
        absorbs=tuple(r.index for r in plan.absorbed),
        users_from=plan.users_from,
    )


def _carried(entry: SummaryEntry) -> str:
    """The summary content an entry holds: a model's summary starts with the heading; a
    failed compaction's text is its failure line, then the content it carried."""
    if entry.text.startswith(SUMMARY_HEADING):
        return entry.text
    return entry.text.partition("\n\n")[2]


def _span_start(plan: CompactionPlan) -> str:
    # an absorbed summary already covers everything before this plan's range
    if plan.absorbed:
        return "the session start"
    return plan.removed[0].ts or f"entry {plan.first_index}"


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
