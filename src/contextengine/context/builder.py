"""Record -> request: the layered, cache-stable request builder (R1.1, R1.4, R7.1).

Order: L1 (scrubbed system prompt; tools, canonical and sorted) -> L2 (``CODE_LAW.md``,
re-read every build, never stored) -> L3 (each entry's frozen rendering) -> live
observations (never stored) -> task-status tail (never stored) -> side-call instruction.

A build costs what was appended since the previous build: rendered history is cached per
session epoch and extended, never recomputed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from contextengine.canonical import canonical_copy, canonical_json
from contextengine.context.code_law import CodeLawReader
from contextengine.context.request import Purpose, Request, Segments
from contextengine.context.scrub import ScrubFinding, scrub_report
from contextengine.errors import ConfigError
from contextengine.session.entries import ToolResultEntry
from contextengine.session.log import LogRecord
from contextengine.session.render import render_tool_result
from contextengine.session.session import Session
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.spec import ToolSpec
from contextengine.types import HistoryMode, Message, SystemMessage, ToolDefinition, UserMessage


@dataclass(frozen=True)
class FullObservation:
    """The full text of one tool result, shown to the model while it is the newest."""

    tool: str
    call_id: str
    text: str


@dataclass(frozen=True)
class LiveContext:
    """What a request shows beyond the record, and never stores.

    ``full_observations`` maps a tool-result entry index to the full observation the
    model should see now. ``round_start`` is the entry index where the current round began
    (used by ``round_scratchpad`` mode). ``tail`` is the task-status text.
    """

    full_observations: Mapping[int, FullObservation] = field(default_factory=dict)
    round_start: int | None = None
    tail: str | None = None


EMPTY_LIVE = LiveContext()


@dataclass(frozen=True)
class BuilderSettings:
    """The request builder's settings (``Config`` fields of the same names, flags in force)."""

    scrub: bool = True
    code_law: bool = True
    cache_breakpoints: bool = True
    history_mode: HistoryMode = "full"
    context_window: int = 200_000


class ContextBuilder:
    """Builds requests for sessions that share one system prompt and tool list;
    ``deferred_tools`` (of those tools) go in every request's ``deferred_tools``."""

    def __init__(
        self,
        *,
        system_prompt: str,
        tools: Sequence[ToolSpec | Mapping[str, Any]] = (),
        project_root: Path | None = None,
        settings: BuilderSettings | None = None,
        deferred_tools: Collection[str] = (),
    ) -> None:
        self._config = settings or BuilderSettings()
        scrubbed = scrub_report(system_prompt) if self._config.scrub else None
        self.scrub_findings: tuple[ScrubFinding, ...] = scrubbed.findings if scrubbed else ()
        specs = sorted((ToolSpec.coerce(t) for t in tools), key=lambda t: t.name)
        names = [t.name for t in specs]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate tool names in {names}")
        tool_objs = [t.to_openai() for t in specs]
        if self._config.scrub:
            scrubbed_tools, findings = _scrub_tree(tool_objs)
            # Scrubbing rewrites strings only, so the tools keep their shape.
            tool_objs = cast(list[ToolDefinition], scrubbed_tools)
            self.scrub_findings += findings
        self._tools: tuple[ToolDefinition, ...] = tuple(tool_objs)
        self._tools_chunk = canonical_json(list(self._tools))
        # Only tools the request lists can be deferred (none under the text protocol).
        self.deferred_tools = frozenset(deferred_tools) & set(names)
        system: SystemMessage = {
            "role": "system",
            "content": scrubbed.text if scrubbed else system_prompt,
        }
        self._system: Message = canonical_copy(system)
        self._system_chunk = canonical_json(self._system)
        self._code_law = CodeLawReader(project_root if self._config.code_law else None)
        self._l2_cache: tuple[str, Message, str] | None = None
        self._hist: _HistoryCache | None = None

    @property
    def tools(self) -> tuple[ToolDefinition, ...]:
        """The session's tools in request form."""
        return self._tools

    @property
    def tool_names(self) -> tuple[str, ...]:
        """Tool names in request order."""
        return tuple(t["function"]["name"] for t in self._tools)

    def build(
        self,
        session: Session,
        live: LiveContext = EMPTY_LIVE,
        *,
        purpose: Purpose = "main",
        mask: ToolMask | None = None,
        extra: Sequence[Message] = (),
        history_records: int | None = None,
    ) -> Request:
        """Build the request for ``session`` now.

        ``history_records``: show only the first that many live records (a side call that
        needs only the older part; the request is still a prefix of the full one).
        """
        hist = self._history(session)
        mode = self._config.history_mode
        cut = hist.count
        live_msgs: list[Message] = []
        if history_records is not None:
            cut = hist.position_of_record(history_records)
        elif mode == "round_scratchpad" and live.round_start is not None:
            cut = hist.position_of(live.round_start)
            live_msgs = self._scratchpad(session, hist.records_from(cut), live)
        elif mode == "compressed":
            live_msgs = [
                _full_observation_message(live.full_observations[i])
                for i in sorted(live.full_observations)
            ]
        l2 = self._l2()
        head: list[Message] = [self._system]
        head_chunks = [self._tools_chunk, self._system_chunk]
        if l2 is not None:
            head.append(l2[1])
            head_chunks.append(l2[2])
        tail_msgs: list[Message] = []
        if live.tail:
            tail: UserMessage = {"role": "user", "content": live.tail}
            tail_msgs.append(canonical_copy(tail))
        extra_msgs = [canonical_copy(m) for m in extra]
        after = live_msgs + tail_msgs + extra_msgs
        persisted_chars = sum(len(c) for c in head_chunks) + hist.chars_before(cut)
        return Request(
            session_id=session.id,
            purpose=purpose,
            _tools=self._tools,
            _messages=(*head, *hist.messages[:cut], *after),
            chunks=(*head_chunks, *hist.chunks[:cut], *(canonical_json(m) for m in after)),
            segments=Segments(
                1, len(head) - 1, cut, len(live_msgs), len(tail_msgs), len(extra_msgs)
            ),
            persisted_chars=persisted_chars,
            epoch=session.epoch,
            rewrite=session.rewrite,
            mask=mask,
            mark_breakpoints=self._config.cache_breakpoints,
            deferred_tools=self.deferred_tools,
        )

    def _history(self, session: Session) -> _HistoryCache:
        hist = self._hist
        if hist is None or hist.session_id != session.id or hist.epoch != session.epoch:
            hist = self._hist = _HistoryCache(session.id, session.epoch)
        hist.extend(session.live_since(hist.record_count))
        return hist

    def _l2(self) -> tuple[str, Message, str] | None:
        found = self._code_law.read()
        if found is None:
            return None
        name, text = found
        if self._l2_cache is None or self._l2_cache[0] != text:
            rules = self._code_law.fit(name, text, self._config.context_window)
            msg: SystemMessage = {
                "role": "system",
                "content": f'<project-rules file="{name}">\n{rules.rstrip()}\n</project-rules>',
            }
            self._l2_cache = (text, canonical_copy(msg), canonical_json(msg))
        return self._l2_cache

    def _scratchpad(
        self,
        session: Session,
        records: Sequence[LogRecord],
        live: LiveContext,
    ) -> list[Message]:
        out: list[Message] = []
        for record in records:
            entry = record.entry
            if isinstance(entry, ToolResultEntry) and record.index in live.full_observations:
                full = live.full_observations[record.index].text
                out.append(render_tool_result(entry, record.index, session.id, session.style, full))
            else:
                out.extend(record.messages)
        return out


class _HistoryCache:
    """Rendered history of one session epoch, extended as records are appended."""

    def __init__(self, session_id: str, epoch: int) -> None:
        self.session_id = session_id
        self.epoch = epoch
        self.record_count = 0
        self.records: list[LogRecord] = []
        self.messages: list[Message] = []
        self.chunks: list[str] = []
        self._ends: list[int] = []  # cumulative chars after each message
        self._first_message_of: dict[int, int] = {}  # entry index -> message position

    @property
    def count(self) -> int:
        return len(self.messages)

    def extend(self, records: Sequence[LogRecord]) -> None:
        total = self._ends[-1] if self._ends else 0
        for record in records:
            self._first_message_of[record.index] = len(self.messages)
            self.records.append(record)
            self.messages.extend(record.messages)
            for chunk in record.chunks:
                total += len(chunk)
                self.chunks.append(chunk)
                self._ends.append(total)
        self.record_count += len(records)

    def position_of(self, entry_index: int) -> int:
        """Message position where entry ``entry_index`` (or the first later one) starts."""
        at = bisect_left(self.records, entry_index, key=lambda r: r.index)
        if at == len(self.records):
            return len(self.messages)
        return self._first_message_of[self.records[at].index]

    def position_of_record(self, count: int) -> int:
        """Message position where the live record at position ``count`` starts."""
        if count >= len(self.records):
            return len(self.messages)
        return self._first_message_of[self.records[count].index]

    def records_from(self, position: int) -> list[LogRecord]:
        """Records whose messages start at or after message ``position``."""
        at = bisect_left(self.records, position, key=lambda r: self._first_message_of[r.index])
        return self.records[at:]

    def chars_before(self, position: int) -> int:
        return self._ends[position - 1] if position > 0 else 0


def _full_observation_message(obs: FullObservation) -> Message:
    header = f'<full-observation tool="{obs.tool}" call="{obs.call_id}">'
    message: UserMessage = {"role": "user", "content": f"{header}\n{obs.text}\n</full-observation>"}
    return canonical_copy(message)


def _scrub_tree(value: object) -> tuple[object, tuple[ScrubFinding, ...]]:
    """Scrub every string inside a JSON-like value (never the JSON syntax around it)."""
    if isinstance(value, str):
        result = scrub_report(value)
        return result.text, result.findings
    if isinstance(value, dict):
        out: dict[object, object] = {}
        found: tuple[ScrubFinding, ...] = ()
        for k, v in value.items():
            out[k], f = _scrub_tree(v)
            found += f
        return out, found
    if isinstance(value, list):
        items: list[object] = []
        found = ()
        for v in value:
            item, f = _scrub_tree(v)
            items.append(item)
            found += f
        return items, found
    return value, ()
