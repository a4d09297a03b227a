"""Running a compaction for the agent: plan, summary side call, archive with one entry.

The summary request is the session's current request with the summary instruction
appended, so the model reads the whole prefix (earlier summaries included) from its cache.
The archive holds every record that leaves the live view, the absorbed earlier summaries
too; the single summary entry is the compaction record, and the store keeps the two
together (the file store writes the archive first, PostgreSQL both in one transaction). A
kill at any point leaves either no compaction (an archive file nothing cites is rewritten
next time) or a complete one.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from pathlib import Path

from contextengine.agent.events import AgentEvent, CompactionEvent
from contextengine.compress.compaction import (
    TIMEOUT_MESSAGE,
    CompactionPlan,
    CompactionSettings,
    clip_summary,
    fallback_text,
    keep_room,
    normalize_summary,
    plan_compaction,
    should_compact,
    summary_entry,
    summary_instruction,
    summary_tokens,
)
from contextengine.context.request import Request
from contextengine.errors import ProviderError
from contextengine.session.entries import SummaryEntry
from contextengine.session.session import Session
from contextengine.session.store.protocol import Archive, archive_name
from contextengine.types import ModelReply
from contextengine.untrusted import JSONObject

SideCall = Callable[[Request, float], Generator[AgentEvent, None, ModelReply | None]]
# (instruction, how many live records to show, None = all) -> the summary request
SummaryRequest = Callable[[str, int | None], Request]

FAILED_MESSAGE = "Summary generation failed ({reason}), keeping recent history only."
TOO_LARGE = "the summary request would not fit the context window"
REGROWTH_SHARE = 0.1
LAST_RESORT_SHARE = 0.95


class Compactor:
    """Decides when a session needs compaction and carries one out."""

    def __init__(
        self,
        session: Session,
        config: CompactionSettings,
        display: Callable[[Path], str],
        tokens: Callable[[Sequence[str]], int],
    ) -> None:
        self._session = session
        self._config = config
        self._display = display
        self._size = tokens  # tokens of rendered chunks, in the provider's units
        self._skipped_epoch: int | None = None
        self._after: int | None = None

    def needed(self, estimate: int) -> bool:
        """The R7.4 trigger for a request of ``estimate`` tokens, with hysteresis.

        When a compaction could not bring the context far below the trigger (the newest
        rounds it must keep are large), the next one waits until the context has grown by
        ``REGROWTH_SHARE`` of the window or nears the window's end, instead of firing again
        a few steps later: each compaction is a summary call and rewrites the cache.
        """
        if not should_compact(estimate, self._session.live_count, self._config):
            return False
        if self._after is None:
            return True
        window = self._config.context_window
        return estimate >= min(self._after + REGROWTH_SHARE * window, LAST_RESORT_SHARE * window)

    def compacted_to(self, tokens: int) -> None:
        """Record the estimated size of the context right after a compaction."""
        self._after = tokens

    def run(
        self,
        summary_request: SummaryRequest,
        ask: SideCall,
        fixed_tokens: int,
        *,
        between_turns: bool = False,
    ) -> Generator[AgentEvent, None, bool]:
        """Compact once; returns whether anything was archived.

        ``fixed_tokens``: what the next request holds besides the live records (L1, L2,
        the tail, live observations); the records kept must fit beside it and the new
        summary below the trigger. ``between_turns``: no round is under way, so none must
        keep its user message (one that failed, too long for the window, may go).
        """
        plan = self._plan(fixed_tokens, between_turns)
        if plan is None:
            if self._skipped_epoch != self._session.epoch:
                self._skipped_epoch = self._session.epoch
                yield CompactionEvent(
                    "skipped", "Nothing can be archived without splitting a round."
                )
            return False
        details: JSONObject = {
            "entries": len(plan.removed),
            "scope": plan.scope,
            "first_index": plan.first_index,
            "end_index": plan.end_index,
            "absorbed": len(plan.absorbed),
        }
        yield CompactionEvent(
            "started", f"Compacting {len(plan.removed)} older entries ({plan.scope}).", details
        )
        archive = self._archive(plan)
        path = self._session.directory / archive.name
        yield CompactionEvent(
            "summarizing", "Writing the archived-history summary…", {"archive": str(path)}
        )
        summary, message = yield from self._summarize(plan, summary_request, ask)
        timed_out = message == TIMEOUT_MESSAGE
        text = summary if summary is not None else fallback_text(message, plan)
        entry = summary_entry(plan, text, self._display(path), timed_out)
        self._session.append(entry, archive)
        if summary is None:
            yield CompactionEvent("timed_out" if timed_out else "failed", message, details)
        else:
            yield CompactionEvent(
                "done",
                f"Archived {len(plan.removed)} entries to {self._display(path)}.",
                details,
            )
        return True

    def _summarize(
        self, plan: CompactionPlan, summary_request: SummaryRequest, ask: SideCall
    ) -> Generator[AgentEvent, None, tuple[str | None, str]]:
        """The new summary, or ``None`` and the line saying why there is none.

        The request is the history up to the last record leaving the view, then the
        instruction: a prefix of the cached request, and all the summary needs. The records
        that stay would only be read for nothing, and the newest of them written to the
        cache for nothing (the request after the compaction rewrites all that follows the
        summary anyway).
        """
        limit = summary_tokens(self._config.context_window)
        instruction = summary_instruction(plan, limit)
        leaving = {r.index for r in (*plan.absorbed, *plan.removed)}
        live = self._session.live
        upto = 1 + max(k for k, r in enumerate(live) if r.index in leaving)
        request = summary_request(instruction, upto)
        if self._size(request.chunks) > self._config.context_window:
            return None, FAILED_MESSAGE.format(reason=TOO_LARGE)
        try:
            reply = yield from ask(request, self._config.summary_timeout_s)
        except ProviderError as exc:
            return None, FAILED_MESSAGE.format(reason=str(exc).splitlines()[0])
        if reply is None:
            return None, TIMEOUT_MESSAGE
        if not reply.content.strip():
            return None, FAILED_MESSAGE.format(reason="the model returned no text")
        summary = normalize_summary(reply.content, plan)
        return clip_summary(summary, limit, lambda text: self._size((text,))), ""

    def _plan(self, fixed_tokens: int, between_turns: bool) -> CompactionPlan | None:
        live = self._session.live
        absorbed = sum(self._size(r.chunks) for r in live if isinstance(r.entry, SummaryEntry))
        return plan_compaction(
            live,
            self._config.keep_rounds,
            self._config.context_window,
            keep_room(self._config, fixed_tokens, absorbed),
            lambda record: self._size(record.chunks),
            turn_open=not between_turns,
        )

    def _archive(self, plan: CompactionPlan) -> Archive:
        # what leaves the live view, in its order there (absorbed summaries first), as the
        # log recorded it (a pruned result's original, not its stub)
        leaving = {r.index for r in (*plan.absorbed, *plan.removed)}
        log = self._session.records
        records = tuple(log[r.index] for r in self._session.live if r.index in leaving)
        number = 1 + sum(1 for r in self._session.records if isinstance(r.entry, SummaryEntry))
        return Archive(archive_name(number), records)
