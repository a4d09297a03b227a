"""Cache-aware pruning of old context (R7.8): shrink it when the cache pays for it.

What shrinks: old successful tool results (each becomes a stub), the long string
arguments of old tool calls (a file's new content, an edit's old and new text: each value
becomes a stub inside the call, which keeps its tool, id and short arguments such as the
path; a free-form input, such as a patch, becomes a stub as a whole), the head of old
long replies (their reasoning; the end, where a text-protocol reply states its action,
stays), and the middle of old long user messages (a pasted log or file, a skill's text, an
earlier harness's compaction summary; the start and end, where people write what they ask,
stay; never the task). A failed call stays verbatim and its result keeps its error verbatim
(R5.1): the error block of a saved output's view, else the output's last lines, back to the
start of a stack trace (what a failed output's view keeps); what a failed result showed
before that, and the reasoning before a failed call, may go, the call itself never. The
newest ``prune_keep_recent`` replies and the results of their calls stay whole.

Prices are relative to an uncached input token: a cache read costs ``read``, a cache write
``write``. Turning results that start at history position ``p`` (tokens) of ``P`` into
stubs ``S`` tokens smaller makes this request write its suffix again instead of reading it,
an extra ``(P - p - S) * write - (P - p) * read``, and makes every later request read ``S``
fewer tokens, a saving of ``S * read`` each. The later steps are not known; the policy
expects as many more as ``prune_horizon`` times the steps so far (a run that has gone on
for long tends to go on), but never more than ``prune_max_payback`` (a run can end at any
step; a batch that needs long to pay back is a bet on its length), and prunes when the
batch pays back its rewrite within that horizon. After a pause longer than the cache lives
(the provider's ``CachePolicy.lifetime_s``) the next request writes its whole prompt anyway: a batch then costs
no rewrite, and everything prunable goes at once. Because the run may end right after
any prune, a batch is also a bet the policy must afford: its extra may not exceed what
the engine has saved so far against the full history (earlier prunes net of their
extras, outputs shown as compressed refs), plus ``prune_risk_share`` of what the
history has cost so far (each token written once, then read at every step); so a run never
ends much worse than with no pruning at all, whenever it ends. Results and replies of any size join a
batch once it is worth making (``prune_min_tokens`` only skips those whose stub would save
next to nothing): the rewrite is paid anyway, and everything pruned with it raises the
saving. It chooses where the batch starts (the oldest candidate, or a later one) for the
largest expected net saving, so one rewrite carries as much as it can.

A stub names the artifact holding the text byte for byte (by ``Externalizer.stub_path``: an
agent's stubs show ``.contextengine/artifacts/<name>``, which its tools open) and the names
(``names_in``) the text held that nothing else in view holds (none that is part of a longer
listed one), shortest first, so what was pruned stays findable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import (
    ERROR_TAIL_CHARS,
    ERROR_TAIL_LINES,
    artifact_name,
    maximal,
    name_list,
    names_in,
)
from contextengine.context.tokens import count_tokens
from contextengine.prices import CachePolicy
from contextengine.session.entries import (
    AssistantEntry,
    PrunedCall,
    PrunedResult,
    PrunedUser,
    PruneEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.toolkit.classify import error_tail
from contextengine.untrusted import JSONObject

# Every later request reads each stub: it says what and where, and no more.
STUB_HEAD = "[pruned: {chars:,} chars, saved at {path}]"
MAX_STUB_NAMES = 120
STUB_ESTIMATE_TOKENS = 35  # a stub's head; its names are paid for out of the saving
ARGUMENT_MIN_CHARS = 200  # shorter call arguments (paths, commands, patterns) stay as they are
CHARS_PER_TOKEN_MAX = 4  # few texts take more characters a token: savings in tokens, from below
STUB_MAX_SHARE = 0.7  # an argument whose stub is not this much shorter stays as it is
TEXT_KEEP_CHARS = 150  # the end of a pruned reply stays: where it says what it does next
TEXT_MIN_CHARS = 250  # a reply's head shorter than this stays
# A user message this long holds a payload (a pasted log or file, a skill's text, an earlier
# harness's compaction summary); its start and end, where people write what they ask, stay.
USER_MIN_CHARS = 2000
USER_KEEP_HEAD = 300
USER_KEEP_TAIL = 600
LINE_SLACK = 200  # a cut moves this far at most to fall on a line start

# A text protocol's action: ReAct's ``Action:`` line, or a tagged call (OpenHands'
# ``<function=…>`` and ``<execute_bash>``, Hermes' ``<tool_call>``, ``<invoke …>``).
_ACTION_LINE = re.compile(
    r"^[ \t]*(?:\**Action\**[ \t]*:|<(?:function=|execute_|tool_call>|invoke\b))", re.M
)
_FENCE_LINE = re.compile(r"^[ \t]*```", re.M)

_Stubber = Callable[[str, str], str]


@dataclass(frozen=True)
class PruneDecision:
    """What one pruning would do and what it is expected to save (tokens, price units)."""

    records: tuple[LogRecord, ...]
    saved_tokens: int
    payback_steps: float
    extra: float  # what the rewrite costs this request beyond reading the cache


@dataclass(frozen=True)
class _Candidate:
    position: int  # history tokens before the record
    record: LogRecord
    saving: int  # tokens the stubs save


@dataclass(frozen=True)
class PruneSettings:
    """Pruning's settings (``Config`` fields of the same names)."""

    pruning: bool = True
    prune_keep_recent: int = 4
    prune_min_tokens: int = 30
    prune_min_batch_tokens: int = 1000
    prune_horizon: float = 0.35
    prune_max_payback: int = 25
    prune_risk_share: float = 0.02


class Pruner:
    """Decides, for one session, when old context turns into stubs, and does it.

    ``cache``: how the provider's prompt cache lives and what it charges (the provider's
    ``cache_policy``, with what the user set instead)."""

    def __init__(
        self,
        session: Session,
        settings: PruneSettings,
        externalizer: Externalizer,
        cache: CachePolicy | None = None,
    ) -> None:
        self._session = session
        self._settings = settings
        self.cache = cache if cache is not None else CachePolicy()
        self._externalizer = externalizer
        self._savings: dict[int, int] = {}  # log index -> what stubbing it saves (it never changes)
        self._spent = 0.0  # what the history has cost so far: written once, then read (price units)
        self._seen = 0  # the history's size (tokens) at the last step
        self._banked = 0.0  # what prunes have saved so far, net of their extras
        self._in_effect = 0  # tokens every request carries less because of the prunes
        self._asked: datetime | None = None  # the last decide(): about when a request went out

    def decide(self) -> PruneDecision | None:
        """The batch worth pruning now, or ``None`` when no batch pays for its rewrite."""
        if not self._settings.pruning:
            return None
        settings = self._settings
        now = datetime.now(UTC)
        cold = self._idle_s(now) >= self.cache.lifetime_s
        self._asked = now
        read, write = self.cache.read_price, self.cache.write_price
        live = self._session.live
        candidates, total = self._candidates(live)
        self._spent += min(total, self._seen) * read + max(0, total - self._seen) * write
        self._seen = total
        self._banked += (self._in_effect + self._externalized(live)) * read
        if not candidates or read <= 0:  # free cache reads: a smaller prefix saves nothing
            return None
        affordable = self._banked + settings.prune_risk_share * self._spent
        horizon = min(
            settings.prune_horizon * _steps(self._session.records), settings.prune_max_payback
        )
        best: PruneDecision | None = None
        best_value = 0.0
        saved = 0
        for k in range(len(candidates) - 1, -1, -1):
            saved += candidates[k].saving
            if saved < settings.prune_min_batch_tokens:
                continue
            suffix = total - candidates[k].position
            # a cold cache writes the suffix anyway: the stubs only make it smaller
            extra = -saved * write if cold else (suffix - saved) * write - suffix * read
            value = saved * read * horizon - extra
            if value > best_value and extra <= affordable:
                best_value = value
                records = tuple(c.record for c in candidates[k:])
                best = PruneDecision(records, saved, max(extra, 0.0) / (saved * read), extra)
        return best

    def prune(self, decision: PruneDecision) -> PruneEntry:
        """Save each pruned text to the artifacts (if not there yet), then record the batch."""
        self._banked -= decision.extra
        self._in_effect += decision.saved_tokens
        chosen = {r.index for r in decision.records}
        kept_text = "\n".join(
            str(m.get("content") or "")
            for r in self._session.live
            if r.index not in chosen
            for m in r.messages
        )
        names = _NameIndex(kept_text)
        failed = _failed_calls(self._session.live)
        results: list[PrunedResult] = []
        calls: list[PrunedCall] = []
        users: list[PrunedUser] = []
        for record in decision.records:
            entry = record.entry
            if isinstance(entry, ToolResultEntry):
                results.append(self._prune_result(record.index, entry, names))
            elif isinstance(entry, UserEntry):
                users.append(self._prune_user(record.index, entry, names))
            else:
                assert isinstance(entry, AssistantEntry)
                keep_calls = _has_failed_call(entry, failed)
                calls.append(self._prune_call(record.index, entry, names, keep_calls))
        prune = PruneEntry(results=tuple(results), calls=tuple(calls), users=tuple(users))
        self._session.append(prune)
        return prune

    def _prune_result(self, index: int, entry: ToolResultEntry, names: _NameIndex) -> PrunedResult:
        """The result as a stub; a failed one's error stays after it, verbatim (R5.1)."""
        saved = self._saved_copy(index, entry)
        head, kept = _result_cut(entry)
        held = [n for n in names.new(head) if n not in kept]
        stub = stub_text(len(head), self._externalizer.stub_path(saved), held)
        return PrunedResult(
            index=index,
            call_id=entry.call_id,
            tool_name=entry.tool_name,
            content=f"{stub}\n{kept}" if kept else stub,
            full_ref=self._externalizer.session_relative(saved),
            status=entry.status,
        )

    def _prune_call(
        self, index: int, entry: AssistantEntry, names: _NameIndex, keep_calls: bool
    ) -> PrunedCall:
        """The reply with its long text head and (unless ``keep_calls``: one of them
        failed) its calls' long arguments stubbed."""
        refs: list[str] = []
        saved_to: set[Path] = set()
        native = self._session.style.protocol == "native"

        def stubber(position: int) -> _Stubber:
            def stub(where: str, value: str) -> str:
                name = f"{index}-{position}-{where}"
                tries = 0
                # a long or odd key path, cut and made safe, may name a file saved already
                while self._externalizer.path_for(name) in saved_to:
                    tries += 1
                    name = f"{index}-{position}-{tries}-{where}"
                held = names.new(value)
                text = stub_text(len(value), self._externalizer.stub_path_for(name), held)
                if len(text) > len(value) * STUB_MAX_SHARE:
                    return value  # a stub about as long as the value saves nothing
                saved = self._externalizer.save(name, value)
                saved_to.add(saved)
                refs.append(self._externalizer.session_relative(saved))
                return text

            return stub

        calls = tuple(
            call.model_copy(update={"arguments_json": _stubbed_json(arguments, stubber(k))})
            if native
            and not keep_calls
            and (arguments := _arguments(call)) is not None
            and any(_long_values(arguments))
            else call
            for k, call in enumerate(entry.tool_calls)
        )
        text = entry.text
        cut = _text_cut(text, native)
        if cut:
            saved = self._externalizer.save(f"{index}-text", text[:cut])
            refs.append(self._externalizer.session_relative(saved))
            head = stub_text(cut, self._externalizer.stub_path(saved), names.new(text[:cut]))
            text = f"{head}\n{text[cut:]}"
        return PrunedCall(
            index=index,
            assistant=entry.model_copy(update={"text": text, "tool_calls": calls}),
            refs=tuple(refs),
        )

    def _prune_user(self, index: int, entry: UserEntry, names: _NameIndex) -> PrunedUser:
        """The message with its middle stubbed; its start and end stay as written."""
        text = entry.text
        cut = _user_cut(text)
        assert cut is not None  # only a message with a middle to prune is a candidate
        start, end = cut
        middle = text[start:end]
        saved = self._externalizer.save(f"{index}-user", middle)
        ends = text[:start] + text[end:]
        held = [n for n in names.new(middle) if n not in ends]
        stub = stub_text(len(middle), self._externalizer.stub_path(saved), held)
        before = "" if start == 0 or text[start - 1] == "\n" else "\n"
        return PrunedUser(
            index=index,
            user=entry.model_copy(update={"text": f"{text[:start]}{before}{stub}\n{text[end:]}"}),
            ref=self._externalizer.session_relative(saved),
        )

    def _candidates(self, live: Sequence[LogRecord]) -> tuple[list[_Candidate], int]:
        """Prunable results, calls and user messages in history order, and the history's
        size in tokens. A user message is one once ``prune_keep_recent`` replies (at least
        one) answered it, unless it is the session's first (the task)."""
        keep = self._settings.prune_keep_recent
        protected = _newest_steps(live, keep)
        protected |= _unanswered_users(live, max(keep, 1)) | _first_user(self._session.records)
        failed = _failed_calls(live)
        records = self._session.records
        out: list[_Candidate] = []
        position = 0
        for record in live:
            size = sum(count_tokens(c) for c in record.chunks)
            if record.index not in protected and records[record.index] is record:
                saving = self._saving(record, failed)
                if saving >= self._settings.prune_min_tokens:
                    out.append(_Candidate(position, record, saving))
            position += size
        return out, position

    def _saving(self, record: LogRecord, failed: set[str]) -> int:
        """Tokens stubbing the log's ``record`` would save; for a reply whose call failed,
        only its text's (R5.1: the failed call stays). Worked out once a record, not on
        every step (a call's result, and so whether it failed, is in the log by then)."""
        saving = self._savings.get(record.index)
        if saving is None:
            entry = record.entry
            native = self._session.style.protocol == "native"
            calls = not _has_failed_call(entry, failed)
            saving = self._savings[record.index] = _stub_saving(entry, native, calls)
        return saving

    def _idle_s(self, now: datetime) -> float:
        """About how long the prompt cache has been idle: the seconds since the last
        decision (one is made before each request), or, for a session opened again, since
        its newest reply."""
        if self._asked is not None:
            return (now - self._asked).total_seconds()
        for record in reversed(self._session.records):
            if isinstance(record.entry, AssistantEntry) and record.ts:
                try:
                    when = datetime.fromisoformat(record.ts)
                except ValueError:  # a log edited by hand: the idle time is unknown
                    return 0.0
                if when.tzinfo is None:  # the log writes UTC
                    when = when.replace(tzinfo=UTC)
                return (now - when).total_seconds()
        return 0.0

    def _externalized(self, live: Sequence[LogRecord]) -> int:
        """Tokens the results in view carry less than their full outputs (a lower bound:
        four characters a token)."""
        saved = 0
        for record in live:
            entry = record.entry
            if isinstance(entry, ToolResultEntry) and entry.full_ref is not None:
                saved += max(0, entry.original_length - len(entry.content)) // CHARS_PER_TOKEN_MAX
        return saved

    def _saved_copy(self, index: int, entry: ToolResultEntry) -> Path:
        """The artifact holding what the result showed; written now if it has none."""
        if entry.full_ref is not None:
            return self._session.layout.directory / entry.full_ref
        return self._externalizer.save(artifact_name(index, entry.tool_name), entry.content)


class _NameIndex:
    """Hands out the names a pruned text held that nothing in view (or listed) holds,
    shortest first: over the 37 public runs a listed name was about as likely to be used
    later whatever its kind (a path, a code name, a word), so the short ones hold the most
    of what the agent goes on to use for the characters every later request reads."""

    def __init__(self, kept_text: str) -> None:
        self._kept = kept_text
        self._listed: set[str] = set()

    def new(self, text: str) -> list[str]:
        names = [n for n in names_in(text) if n not in self._kept and n not in self._listed]
        held = sorted(maximal(names, 4 * MAX_STUB_NAMES), key=len)
        # only what a stub shows is held by it: a name left out stays free for the next
        self._listed.update(held[:MAX_STUB_NAMES])
        return held


def stub_text(chars: int, path: str, names: Sequence[str]) -> str:
    """The stub that stands for a pruned text: its length, where it is, and the names it
    held that the stub does not hold already (a pruned ref's own path, say)."""
    head = STUB_HEAD.format(chars=chars, path=path)
    listed = name_list("names: ", [n for n in names if n not in head], MAX_STUB_NAMES)
    return f"{head}\n{listed}" if listed else head


def failure_kept(content: str) -> str:
    """The end of a failed result's text that stays when the rest is pruned (R5.1): the
    error block that ends a saved output's view or a difference, else the text's last lines
    (back to the start of a stack trace), as a failed output's view keeps them."""
    if content.endswith("</error>") and (at := content.find("\n<error")) >= 0:
        return content[at + 1 :]
    tail = error_tail(content, ERROR_TAIL_LINES, chars=ERROR_TAIL_CHARS).removeprefix("…")
    at = content.rfind(tail)  # not found: line breaks ``splitlines`` reads alike; keep all
    return content[at:] if at >= 0 else content


def _result_cut(entry: ToolResultEntry) -> tuple[str, str]:
    """A result's text as the part a stub stands for and the part that stays after it (a
    failure's error; nothing of a success)."""
    kept = failure_kept(entry.content) if entry.status != "success" else ""
    return entry.content[: len(entry.content) - len(kept)], kept


def _stub_saving(entry: object, native: bool, calls: bool) -> int:
    """Tokens stubbing ``entry`` would save: a result's (a failed one's before its error),
    a long user message's middle, or a reply's long text and, where calls are sent as
    calls (and ``calls``), long arguments."""
    if isinstance(entry, ToolResultEntry):
        return count_tokens(_result_cut(entry)[0]) - STUB_ESTIMATE_TOKENS
    if isinstance(entry, UserEntry):
        middle = _user_cut(entry.text)
        if middle is None:
            return 0
        return count_tokens(entry.text[middle[0] : middle[1]]) - STUB_ESTIMATE_TOKENS
    if not isinstance(entry, AssistantEntry):
        return 0
    cut = _text_cut(entry.text, native)
    saving = count_tokens(entry.text[:cut]) - STUB_ESTIMATE_TOKENS if cut else 0
    if native and calls:
        saving += sum(
            count_tokens(value) - STUB_ESTIMATE_TOKENS
            for call in entry.tool_calls
            if (arguments := _arguments(call)) is not None
            for value in _long_values(arguments)
        )
    return saving


def _text_cut(text: str, native: bool) -> int:
    """Where a reply's pruned head ends (0: keep it whole).

    The text's last ``TEXT_KEEP_CHARS`` (from a line start) stay, where a reply says what
    it does next; a text-protocol reply (``native`` false) states its action there too, so
    its action (``_action_start``) stays whole however long. The head goes only when it is
    long enough to be worth a stub.
    """
    start = len(text) - TEXT_KEEP_CHARS
    if not native:
        start = min(start, _action_start(text))
    if start < TEXT_MIN_CHARS:
        return 0
    if text[start - 1] == "\n":
        return start
    line = text.find("\n", start)
    return line + 1 if line != -1 else start


def _user_cut(text: str) -> tuple[int, int] | None:
    """The middle of a long user message that pruning may stub, ``(start, end)``, or
    ``None``: its first ``USER_KEEP_HEAD`` and last ``USER_KEEP_TAIL`` characters stay,
    each cut moved to a line start when one is near."""
    if len(text) < USER_MIN_CHARS:
        return None
    start = text.find("\n", USER_KEEP_HEAD, USER_KEEP_HEAD + LINE_SLACK) + 1 or USER_KEEP_HEAD
    tail = len(text) - USER_KEEP_TAIL
    end = text.rfind("\n", tail - LINE_SLACK, tail) + 1 or tail
    return (start, end) if end - start >= USER_MIN_CHARS - USER_KEEP_HEAD - USER_KEEP_TAIL else None


def _action_start(text: str) -> int:
    """Where a text-protocol reply's action begins: its last ``Action:`` or tagged-call
    line, else the opening of its last code block (the text's length when it has none)."""
    actions = [m.start() for m in _ACTION_LINE.finditer(text)]
    if actions:
        return actions[-1]
    fences = [m.start() for m in _FENCE_LINE.finditer(text)]
    if not fences:
        return len(text)
    return fences[-2] if len(fences) % 2 == 0 else fences[-1]  # an odd count: left open


def _arguments(call: ToolCallRecord) -> JSONObject | str | None:
    """The call's arguments as an object, or as text when they are free-form (not JSON: a
    custom tool's input, such as Codex's ``apply_patch`` patch); ``None`` for other JSON."""
    try:
        value = json.loads(call.arguments_json)
    except ValueError:
        return call.arguments_json
    return value if isinstance(value, dict) else None


def _stubbed_json(arguments: JSONObject | str, stub: _Stubber) -> str:
    """The call's new ``arguments_json``: an object's long values stubbed, or free-form
    arguments as their stub, text as they were."""
    if isinstance(arguments, str):
        return str(_stub_values(arguments, stub, "input"))
    return canonical_json(_stub_values(arguments, stub))


def _long_values(value: Any, top: bool = True) -> Iterator[str]:
    """The parts of call arguments long enough to be worth a stub, as text: each long
    string, and below the top level each list or object that is long as a whole though
    none of its strings is (a todo list, a batch of small edits), as its JSON."""
    if isinstance(value, str):
        if len(value) >= ARGUMENT_MIN_CHARS:
            yield value
    elif (whole := _whole(value, top)) is not None:
        yield whole
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _long_values(item, top=False)


def _stub_values(value: Any, stub: _Stubber, where: str = "", top: bool = True) -> Any:
    """``value`` with each part ``_long_values`` finds replaced by ``stub(where, text)``
    (a list or object stays as it is when its stub would be about as long)."""
    if isinstance(value, str):
        return stub(where or "value", value) if len(value) >= ARGUMENT_MIN_CHARS else value
    if (whole := _whole(value, top)) is not None:
        stubbed = stub(where, whole)
        return value if stubbed is whole else stubbed
    if isinstance(value, dict):
        return {
            k: _stub_values(v, stub, f"{where}.{k}" if where else str(k), top=False)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            _stub_values(v, stub, f"{where}.{n}" if where else str(n), top=False)
            for n, v in enumerate(value)
        ]
    return value


def _whole(value: Any, top: bool) -> str | None:
    """The JSON of a list or object below the top level (the call's own arguments keep
    their keys) that is long as a whole and holds no long string, else ``None``."""
    if top or not isinstance(value, dict | list) or _holds_long_string(value):
        return None
    text = canonical_json(value)
    return text if len(text) >= ARGUMENT_MIN_CHARS else None


def _holds_long_string(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) >= ARGUMENT_MIN_CHARS
    if isinstance(value, dict):
        return any(_holds_long_string(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_long_string(v) for v in value)
    return False


def _failed_calls(live: Sequence[LogRecord]) -> set[str]:
    """Ids of the calls whose result in view is an error."""
    return {
        r.entry.call_id
        for r in live
        if isinstance(r.entry, ToolResultEntry) and r.entry.status == "error"
    }


def _has_failed_call(entry: object, failed: set[str]) -> bool:
    """Whether ``entry`` is a reply one of whose calls is in ``failed``."""
    return isinstance(entry, AssistantEntry) and any(c.id in failed for c in entry.tool_calls)


def _newest_steps(live: Sequence[LogRecord], keep: int) -> set[int]:
    """Indices of the newest ``keep`` replies and of every result of their calls (and of
    the newest ``keep`` results, whatever call they answer): the results of one reply's
    parallel calls are read together, and a harness that puts a batch's whole output in
    its first result would otherwise see that one pruned a step after it was read, its
    placeholders being the newest results."""
    if not keep:
        return set()
    replies = [(r.index, r.entry) for r in live if isinstance(r.entry, AssistantEntry)][-keep:]
    calls = {call.id for _, reply in replies for call in reply.tool_calls}
    results = [(r.index, r.entry) for r in live if isinstance(r.entry, ToolResultEntry)]
    answers = {index for index, result in results if result.call_id in calls}
    newest = {index for index, _ in results[-keep:]}
    return {index for index, _ in replies} | answers | newest


def _unanswered_users(live: Sequence[LogRecord], replies: int) -> set[int]:
    """Indices of the user messages that fewer than ``replies`` replies came after."""
    out: set[int] = set()
    seen = 0
    for record in reversed(live):
        if isinstance(record.entry, AssistantEntry):
            seen += 1
            if seen >= replies:
                break
        elif isinstance(record.entry, UserEntry):
            out.add(record.index)
    return out


def _first_user(records: Sequence[LogRecord]) -> set[int]:
    """The index of the session's first user message (the task), if it has one."""
    return {next((r.index for r in records if isinstance(r.entry, UserEntry)), -1)}


def _steps(records: Sequence[LogRecord]) -> int:
    return sum(1 for r in records if isinstance(r.entry, AssistantEntry))
