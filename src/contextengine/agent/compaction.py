"""Running a compaction for the agent: plan, archive first, summary side call, one entry.

The summary request is the session's current request with the summary instruction
appended, so the model reads the whole prefix from its cache. The archive is written
before anything is recorded; the single summary entry is the compaction record. A kill at
any point leaves either no compaction (the archive file is rewritten next time) or a
complete one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

from contextengine.agent.events import AgentEvent, CompactionEvent
from contextengine.compress.compaction import (
    TIMEOUT_MESSAGE,
    normalize_summary,
    plan_compaction,
    should_compact,
    summary_entry,
    summary_instruction,
)
from contextengine.config import Config
from contextengine.context.request import Request
from contextengine.errors import ProviderError
from contextengine.session.entries import SummaryEntry
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.types import ModelReply

SideCall = Callable[[Request, float], Generator[AgentEvent, None, ModelReply | None]]

FAILED_MESSAGE = "Summary generation failed ({reason}), keeping recent history only."
REGROWTH_SHARE = 0.1
LAST_RESORT_SHARE = 0.95


class Compactor:
    """Decides when a session needs compaction and carries one out."""

    def __init__(self, session: Session, config: Config, display: Callable[[Path], str]) -> None:
        self._session = session
        self._config = config
        self._display = display
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
        self, summary_request: Callable[[str], Request], ask: SideCall
    ) -> Generator[AgentEvent, None, bool]:
        """Compact once; returns whether anything was archived."""
        plan = plan_compaction(
            self._session.live, self._config.keep_rounds, self._config.context_window
        )
        if plan is None:
            if self._skipped_epoch != self._session.epoch:
                self._skipped_epoch = self._session.epoch
                yield CompactionEvent(
                    "skipped", "Nothing can be archived without splitting a round."
                )
            return False
        details = {
            "entries": len(plan.removed),
            "scope": plan.scope,
            "first_index": plan.first_index,
            "end_index": plan.end_index,
        }
        yield CompactionEvent(
            "started", f"Compacting {len(plan.removed)} older entries ({plan.scope}).", details
        )
        archive = self._write_archive(plan.removed)
        yield CompactionEvent(
            "summarizing", "Writing the archived-history summary…", {"archive": str(archive)}
        )
        timed_out = False
        try:
            reply = yield from ask(
                summary_request(summary_instruction(plan)), self._config.summary_timeout_s
            )
        except ProviderError as exc:
            reply, reason = None, str(exc).splitlines()[0]
            text = FAILED_MESSAGE.format(reason=reason)
        else:
            if reply is None:
                timed_out, text = True, TIMEOUT_MESSAGE
            elif not reply.content.strip():
                text = FAILED_MESSAGE.format(reason="the model returned no text")
            else:
                text = normalize_summary(reply.content, plan)
        self._session.append(summary_entry(plan, text, self._display(archive), timed_out))
        if reply is None or not reply.content.strip():
            yield CompactionEvent("timed_out" if timed_out else "failed", text, details)
        else:
            yield CompactionEvent(
                "done",
                f"Archived {len(plan.removed)} entries to {self._display(archive)}.",
                details,
            )
        return True

    def _write_archive(self, records: Sequence[LogRecord]) -> Path:
        number = 1 + sum(1 for r in self._session.records if isinstance(r.entry, SummaryEntry))
        folder = self._session.layout.archive
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"compaction-{number:04d}.jsonl"
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(r.to_json() + "\n" for r in records)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return path
