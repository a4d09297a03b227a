"""A production policy (``measure.policies``) applied to the ``full_history`` replay.

Each ``full_history`` request (a plain append-only chat) is shown as the policy would send
it: spilled results stubbed from the request they first appear in; cleared results as
their placeholder; a compacted span as one summary message. The requests are charged by
the same cache model as every strategy (``accounting``), every message marked for caching
as in ``full_history``, so a policy that rewrites history pays the rewrite. A request that
reaches no trigger is the ``full_history`` request itself, charged the same.

Summaries are simulated once for every policy (``docs/baselines.md``): the summary request
is what the policy sends (the request plus an instruction, reading its cached prefix, or a
fresh prompt holding the span), and the summary holds the identifiers of the span it
replaces, newest first, within ``SUMMARY_BUDGET_TOKENS``: an optimistic summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from contextengine.canonical import canonical_json
from contextengine.context.request import Request, Segments
from contextengine.measure.accounting import CacheAccountant
from contextengine.measure.playback import ReplayCall
from contextengine.measure.policies import SUMMARY_BUDGET_TOKENS, Clear, Compact, Policy
from contextengine.measure.sliding_window import window_start
from contextengine.measure.summaries import identifier_summary
from contextengine.session.diversity import TEXT_OBSERVATION_TEMPLATES
from contextengine.types import Message, ModelReply

# full_history renders text-protocol observations with the plain template (diversity off)
OBSERVATION_PREFIX = TEXT_OBSERVATION_TEMPLATES[0].split("{", 1)[0]
SUMMARY_HEADING = "Summary of the conversation so far: the identifiers it used, newest first."
SUMMARY_INSTRUCTION = (
    "Summarize the conversation above for the agent that continues it: the task, what was "
    "done, what was found, and every file, symbol and command it will need."
)
VERIFY_INSTRUCTION = (
    "Check the summary you just wrote against the conversation: add any file, symbol, "
    "result or constraint it left out, and write the final summary."
)

Entry = tuple[int | None, Message]  # (index in the full history, message shown)


def policy_calls(
    policy: Policy, plain: Sequence[ReplayCall], accountant: CacheAccountant, window: int
) -> list[ReplayCall]:
    """The calls ``policy`` makes over the ``full_history`` calls ``plain`` (its main
    requests, charged by ``accountant``), with a ``window``-token context."""
    return _PolicyRun(policy, accountant, window).play(plain)


def is_result(message: Mapping[str, Any]) -> bool:
    """Whether a plain-chat message is a tool result (a text-protocol observation too)."""
    role = message.get("role")
    content = message.get("content")
    return role == "tool" or (
        role == "user" and isinstance(content, str) and content.startswith(OBSERVATION_PREFIX)
    )


def summary_text(span: Sequence[Mapping[str, Any]], accountant: CacheAccountant) -> str:
    """The simulated summary of ``span``: its identifiers, newest first, deduplicated,
    within ``SUMMARY_BUDGET_TOKENS``."""
    return identifier_summary(
        SUMMARY_HEADING, span, accountant.counter.count, SUMMARY_BUDGET_TOKENS
    )


@dataclass(frozen=True)
class _Cut:
    """One compaction: what stays of the view and what the summary replaces."""

    kept: tuple[int, ...]
    upto: int
    replaced: tuple[Message, ...]


class _PolicyRun:
    """The state of one policy along one recording: cleared results and the summary."""

    def __init__(self, policy: Policy, accountant: CacheAccountant, window: int) -> None:
        self.policy = policy
        self.accountant = accountant
        self.window = window
        self.cleared: set[int] = set()
        self.summary: Message | None = None
        self.kept: tuple[int, ...] = ()  # messages before the summary, by full index
        self.upto = 1  # full-history messages from here on follow the summary
        self.epoch = 0
        self.rewrite: Literal["compaction", "prune"] | None = None
        self.calls: list[ReplayCall] = []
        self.last_step = -1

    def play(self, plain: Sequence[ReplayCall]) -> list[ReplayCall]:
        """Charge the policy's side calls and main requests, in order."""
        for call in plain:
            if call.step is None:
                continue
            full = call.request
            if self.policy.clear is not None:
                self._clear(full, self.policy.clear)
            if self.policy.compact is not None:
                self._compact(full, self.policy.compact)
            view = self._request(full, self._entries(full))
            cost = self.accountant.charge(view, call.cost.output_tokens)
            self.calls.append(ReplayCall(view, call.reply, cost, call.step, call.after_step))
            self.last_step = call.step
        return self.calls

    # the view

    def _entries(self, full: Request, *, cleared: bool = True) -> list[Entry]:
        """The view of ``full``: the summary in place of what it replaced, spilled results
        as stubs and (``cleared``) cleared ones as placeholders."""
        messages = full.messages
        shown: list[Entry] = [(0, messages[0])]
        if self.summary is not None:
            shown += [(k, messages[k]) for k in self.kept]
            shown.append((None, self.summary))
        shown += [(k, messages[k]) for k in range(self.upto, len(messages))]
        return [(k, m if k is None else self._shown(k, m, cleared)) for k, m in shown]

    def _shown(self, k: int, message: Message, cleared: bool) -> Message:
        if not is_result(message):
            return message
        message = self._spilled(k, message)
        clear = self.policy.clear
        if cleared and clear is not None and k in self.cleared:
            return _placeholder(k, message, clear)
        return message

    def _spilled(self, k: int, message: Message) -> Message:
        spill = self.policy.spill
        text = _result_text(message)
        if spill is None or len(text) <= spill.over_chars:
            return message
        preview = spill.preview.of(text)
        return _with_text(
            message, spill.template.format(path=_path(k), chars=f"{len(text):,}", preview=preview)
        )

    def _request(
        self,
        full: Request,
        entries: Sequence[Entry],
        *,
        purpose: Literal["main", "summary"] = "main",
        extra: Sequence[Message] = (),
        tools: bool = True,
    ) -> Request:
        """A request of ``entries`` (all marked for caching) and ``extra`` messages after."""
        originals = full.messages
        chunks = [full.chunks[0] if tools else canonical_json([])]
        for k, message in entries:
            if k is not None and message is originals[k]:
                chunks.append(full.chunks[k + 1])  # unchanged: the very chunk full_history sent
            else:
                chunks.append(canonical_json(message))
        chunks += [canonical_json(m) for m in extra]
        persisted = len(entries)
        return Request(
            session_id=full.session_id,
            purpose=purpose,
            _tools=tuple(full.tools) if tools else (),
            _messages=(*(m for _, m in entries), *extra),
            chunks=tuple(chunks),
            segments=Segments(1, 0, persisted - 1, 0, 0, len(extra)),
            persisted_chars=sum(len(c) for c in chunks[: persisted + 1]),
            epoch=self.epoch,
            rewrite=self.rewrite,
        )

    def _tokens(self, full: Request, entries: Sequence[Entry]) -> list[int]:
        """Tokens of the tool list, then of each entry."""
        return self.accountant.chunk_tokens(self._request(full, entries))

    # the moves

    def _clear(self, full: Request, clear: Clear) -> None:
        # the trigger reads the request as the client holds it (an API edit is the
        # server's: the client sends every result in full)
        if clear.trigger_tokens and (
            sum(self._tokens(full, self._entries(full, cleared=False))) < clear.trigger_tokens
        ):
            return
        entries = self._entries(full)
        tokens = self._tokens(full, entries)
        results = [i for i, (k, m) in enumerate(entries) if k is not None and is_result(m)]
        if clear.protect_latest and results and results[-1] == len(entries) - 1:
            results.pop()
        chosen: list[int] = []
        prunable = kept = protected = 0
        for i in reversed(results):
            k = entries[i][0]
            if k is None or k in self.cleared:
                continue
            if clear.keep_results is not None and kept < clear.keep_results:
                kept += 1
                continue
            if clear.keep_tool_tokens is not None and protected <= clear.keep_tool_tokens:
                protected += tokens[i + 1]
                if protected <= clear.keep_tool_tokens:
                    continue
            if clear.only_if_shorter and not self._shorter(k, entries[i][1], clear, tokens[i + 1]):
                continue
            chosen.append(k)
            prunable += tokens[i + 1]
        if chosen and prunable >= clear.min_cleared_tokens:
            self.cleared.update(chosen)
            self.epoch, self.rewrite = self.epoch + 1, "prune"

    def _shorter(self, k: int, message: Message, clear: Clear, tokens: int) -> bool:
        """Whether ``message`` (``tokens`` long) is longer than its placeholder."""
        placeholder = _placeholder(k, message, clear)
        return self.accountant.counter.count(canonical_json(placeholder)) < tokens

    def _compact(self, full: Request, compact: Compact) -> None:
        entries = self._entries(full)
        tokens = self._tokens(full, entries)
        threshold = compact.threshold(self.window)
        by_tokens = threshold is not None and sum(tokens) >= threshold
        by_messages = compact.trigger_messages is not None and len(entries) > (
            compact.trigger_messages
        )
        if not (by_tokens or by_messages):
            return
        cut = self._cut(full, compact, entries, tokens[1:], by_tokens, by_messages)
        if cut is None:
            return
        text = summary_text(cut.replaced, self.accountant)
        self._summarize(full, compact, entries, cut.replaced, text)
        self.summary = {"role": "user", "content": text}
        self.kept, self.upto = cut.kept, cut.upto
        self.epoch, self.rewrite = self.epoch + 1, "compaction"

    def _cut(
        self,
        full: Request,
        compact: Compact,
        entries: Sequence[Entry],
        tokens: Sequence[int],
        by_tokens: bool,
        by_messages: bool,
    ) -> _Cut | None:
        """What a compaction keeps (``None``: nothing to replace, no compaction)."""
        history = list(range(1, len(entries)))  # entry positions after the system prompt
        head = [i for i in history if entries[i][0] is not None][: compact.keep_first]
        start = self.upto if self.summary is not None else 1
        suffix = [
            i for i in history if i not in head and (k := entries[i][0]) is not None and k >= start
        ]
        tails: list[int] = []
        if by_messages and compact.keep_messages is not None:
            tails.append(compact.keep_messages)
        if by_tokens and compact.keep_window_share is not None:
            tails.append(_tail_within(tokens, suffix, int(self.window * compact.keep_window_share)))
        if by_tokens and compact.split_at_user and compact.keep_history_share is not None:
            split = _split_at_user(entries, 1 - compact.keep_history_share)
            tails.append(len(entries) - split)
        keep = min(min(tails, default=0), len(suffix))
        messages = [entries[i][1] for i in suffix]
        first = window_start(messages, len(suffix) - keep)
        tail = suffix[first:]
        replaced = [i for i in history if i not in head and i not in tail]
        if not replaced:
            return None
        users = _newest_users(entries, replaced, tokens, compact.keep_user_tokens)
        kept = sorted(k for i in [*head, *users] if (k := entries[i][0]) is not None)
        upto = entries[tail[0]][0] if tail else None
        return _Cut(
            kept=tuple(kept),
            upto=len(full.messages) if upto is None else upto,
            replaced=tuple(entries[i][1] for i in replaced),
        )

    def _summarize(
        self,
        full: Request,
        compact: Compact,
        entries: Sequence[Entry],
        replaced: Sequence[Message],
        text: str,
    ) -> None:
        """Charge the summary request(s): the view plus an instruction (reading its cached
        prefix), or a fresh prompt of the replaced span; a verification pass reads the
        first request and the summary."""
        if compact.summary_reads_cache:
            base, tools = list(entries), True
        else:
            system: Message = {"role": "system", "content": SUMMARY_INSTRUCTION}
            base, tools = [(None, system), *((None, m) for m in replaced)], False
        extra: list[Message] = [{"role": "user", "content": SUMMARY_INSTRUCTION}]
        output = self.accountant.counter.count(text)
        for number in range(compact.summary_calls):
            if number:
                extra += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": VERIFY_INSTRUCTION},
                ]
            request = self._request(full, base, purpose="summary", extra=extra, tools=tools)
            cost = self.accountant.charge(request, output)
            reply = ModelReply(content=text)
            self.calls.append(ReplayCall(request, reply, cost, None, self.last_step))


def _result_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    text = content if isinstance(content, str) else "" if content is None else str(content)
    return text.removeprefix(OBSERVATION_PREFIX) if message.get("role") == "user" else text


def _with_text(message: Message, text: str) -> Message:
    prefix = OBSERVATION_PREFIX if message["role"] == "user" else ""
    changed = message.copy()
    changed["content"] = prefix + text
    return changed


def _placeholder(k: int, message: Message, clear: Clear) -> Message:
    text = _result_text(message)
    placeholder = clear.template.format(
        lines=len(text.splitlines()), path=_path(k), preview=clear.preview.of(text)
    )
    return _with_text(message, placeholder)


def _path(k: int) -> str:
    return f"tool-results/result-{k:04d}.txt"


def _tail_within(tokens: Sequence[int], positions: Sequence[int], budget: int) -> int:
    """How many of the last ``positions`` fit in ``budget`` tokens (``tokens`` by entry
    position)."""
    total = count = 0
    for i in reversed(positions):
        total += tokens[i]
        if total > budget:
            break
        count += 1
    return count


def _split_at_user(entries: Sequence[Entry], fraction: float) -> int:
    """Gemini CLI's split: the first user message (not a tool result) at or past
    ``fraction`` of the history's characters; else everything, when the history ends on a
    reply without calls; else the last user message before that point. Positions count
    the system prompt as 0; a split at 1 replaces nothing."""
    history = entries[1:]
    sizes = [len(canonical_json(m)) for _, m in history]
    target = sum(sizes) * fraction
    last = 0
    done = 0
    for j, (_, message) in enumerate(history):
        if message.get("role") == "user" and not is_result(message):
            if done >= target:
                return j + 1
            last = j
        done += sizes[j]
    final = history[-1][1] if history else None
    if final is not None and final["role"] == "assistant" and not final.get("tool_calls"):
        return len(entries)
    return last + 1


def _newest_users(
    entries: Sequence[Entry], positions: Sequence[int], tokens: Sequence[int], budget: int
) -> list[int]:
    """The newest user messages among ``positions`` that fit in ``budget`` tokens."""
    chosen: list[int] = []
    for i in reversed(positions):
        k, message = entries[i]
        if k is None or message.get("role") != "user" or is_result(message):
            continue
        if tokens[i] > budget:
            break
        budget -= tokens[i]
        chosen.append(i)
    return chosen
