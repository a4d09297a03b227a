"""Cache-aware pruning of old tool results (R7.8): shrink them when the cache pays for it.

Prices are relative to an uncached input token: a cache read costs ``read``, a cache write
``write``. Turning results that start at history position ``p`` (tokens) of ``P`` into
stubs ``S`` tokens smaller makes this request write its suffix again instead of reading it,
an extra ``(P - p - S) * write - (P - p) * read``, and makes every later request read ``S``
fewer tokens, a saving of ``S * read`` each. The later steps are not known; the policy
expects as many more as ``prune_horizon`` times the steps so far (a run that has gone on
for long tends to go on), and prunes when the batch pays back its rewrite within that
horizon. It chooses where the batch starts (the oldest candidate, or a later one) for the
largest expected net saving, so one rewrite carries as much as it can.

A stub names the artifact holding the result byte for byte and the code-like names the
result held that nothing else in view holds, so what was pruned stays findable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import artifact_name, names_in
from contextengine.config import Config
from contextengine.context.tokens import count_tokens
from contextengine.session.entries import (
    AssistantEntry,
    PrunedResult,
    PruneEntry,
    ToolResultEntry,
)
from contextengine.session.log import LogRecord
from contextengine.session.session import Session

STUB_HEAD = "[pruned: {chars:,} chars of an older output, saved at {path}; read it with file_read]"
MAX_STUB_NAMES = 120
STUB_ESTIMATE_TOKENS = 40  # a stub's head; its names are paid for out of the saving


@dataclass(frozen=True)
class PruneDecision:
    """What one pruning would do and what it is expected to save (tokens, price units)."""

    records: tuple[LogRecord, ...]
    saved_tokens: int
    payback_steps: float


@dataclass(frozen=True)
class _Candidate:
    position: int  # history tokens before the result
    record: LogRecord
    saving: int  # tokens the stub saves


class Pruner:
    """Decides, for one session, when old tool results turn into stubs, and does it."""

    def __init__(self, session: Session, config: Config, externalizer: Externalizer) -> None:
        self._session = session
        self._config = config
        self._externalizer = externalizer

    def decide(self) -> PruneDecision | None:
        """The batch worth pruning now, or ``None`` when no batch pays for its rewrite."""
        if not self._config.flag("pruning"):
            return None
        live = self._session.live
        candidates, total = self._candidates(live)
        if not candidates:
            return None
        config = self._config
        read, write = config.cache_read_price, config.cache_write_price
        if read <= 0:
            return None  # free cache reads: a smaller prefix saves nothing
        horizon = config.prune_horizon * _steps(self._session.records)
        best: PruneDecision | None = None
        best_value = 0.0
        saved = 0
        for k in range(len(candidates) - 1, -1, -1):
            saved += candidates[k].saving
            if saved < config.prune_min_batch_tokens:
                continue
            suffix = total - candidates[k].position
            extra = (suffix - saved) * write - suffix * read
            value = saved * read * horizon - extra
            if value > best_value:
                best_value = value
                records = tuple(c.record for c in candidates[k:])
                best = PruneDecision(records, saved, max(extra, 0.0) / (saved * read))
        return best

    def prune(self, decision: PruneDecision) -> PruneEntry:
        """Save each result to the artifacts (if not there yet), then record the batch."""
        chosen = {r.index for r in decision.records}
        kept_text = "\n".join(
            str(m.get("content") or "")
            for r in self._session.live
            if r.index not in chosen
            for m in r.messages
        )
        listed: set[str] = set()
        results = []
        for record in decision.records:
            entry = record.entry
            assert isinstance(entry, ToolResultEntry)
            saved = self._saved_copy(record.index, entry)
            names = [n for n in names_in(entry.content) if n not in kept_text and n not in listed]
            listed.update(names)
            results.append(
                PrunedResult(
                    index=record.index,
                    call_id=entry.call_id,
                    tool_name=entry.tool_name,
                    content=stub_text(len(entry.content), self._externalizer.display(saved), names),
                    full_ref=self._externalizer.session_relative(saved),
                )
            )
        prune = PruneEntry(results=tuple(results))
        self._session.append(prune)
        return prune

    def _candidates(self, live: Sequence[LogRecord]) -> tuple[list[_Candidate], int]:
        """Prunable results in history order, and the history's size in tokens."""
        results = [r for r in live if isinstance(r.entry, ToolResultEntry)]
        keep = self._config.prune_keep_recent
        protected = {r.index for r in results[len(results) - keep :]} if keep else set()
        records = self._session.records
        out: list[_Candidate] = []
        position = 0
        for record in live:
            size = sum(count_tokens(c) for c in record.chunks)
            if _prunable(record, records) and record.index not in protected:
                entry = record.entry
                assert isinstance(entry, ToolResultEntry)
                saving = count_tokens(entry.content) - STUB_ESTIMATE_TOKENS
                if saving >= self._config.prune_min_tokens:
                    out.append(_Candidate(position, record, saving))
            position += size
        return out, position

    def _saved_copy(self, index: int, entry: ToolResultEntry) -> Path:
        """The artifact holding what the result showed; written now if it has none."""
        if entry.full_ref is not None:
            return self._session.layout.directory / entry.full_ref
        return self._externalizer.save(artifact_name(index, entry.tool_name), entry.content)


def stub_text(chars: int, path: str, names: Sequence[str]) -> str:
    """The stub that stands for a pruned result: where it is, and the names it held."""
    head = STUB_HEAD.format(chars=chars, path=path)
    if not names:
        return head
    shown = names[:MAX_STUB_NAMES]
    more = f" (and {len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    return f"{head}\nnames: {', '.join(shown)}{more}"


def _prunable(record: LogRecord, log: Sequence[LogRecord]) -> bool:
    """A successful tool result not already a stub (errors stay verbatim, R5.1); a stub
    is a live record that is not the log's own record of that index."""
    entry = record.entry
    return (
        isinstance(entry, ToolResultEntry)
        and entry.status == "success"
        and log[record.index] is record
    )


def _steps(records: Sequence[LogRecord]) -> int:
    return sum(1 for r in records if isinstance(r.entry, AssistantEntry))
