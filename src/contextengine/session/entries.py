"""The entries of a session record: frozen, tagged, versioned.

An entry is what happened (a user message, an assistant step, a tool result ...), in our
own provider-neutral shape. Translating to a vendor's wire format happens only when an
entry is rendered (``contextengine.session.render``) and in the provider adapters.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from contextengine.types import ToolCall

ENTRY_FORMAT_VERSION = 2
"""Version written into new logs: 2 added ``tool_start``."""

READABLE_FORMAT_VERSIONS = frozenset({1, 2})
"""Versions a log (its header and each record) may carry and still load."""


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCallRecord(_Entry):
    """A recorded tool call (our id, the tool name, canonical or raw arguments)."""

    id: str
    name: str
    arguments_json: str

    @classmethod
    def of(cls, call: ToolCall) -> ToolCallRecord:
        """Record a provider-level tool call."""
        return cls(id=call.id, name=call.name, arguments_json=call.arguments_json)

    def as_call(self) -> ToolCall:
        """The call as the shared ``ToolCall`` type."""
        return ToolCall(self.id, self.name, self.arguments_json)


class UserEntry(_Entry):
    """A user message (reminders for ``@file`` mentions already appended)."""

    kind: Literal["user"] = "user"
    text: str


class AssistantEntry(_Entry):
    """One assistant reply: thought/answer text and the tool calls it made.

    ``provider_items`` are the reply's opaque provider items (``ModelReply.provider_items``),
    rendered with the reply so the provider gets them back on every later request.
    """

    kind: Literal["assistant"] = "assistant"
    text: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    reasoning: str = ""
    provider_items: tuple[dict[str, JsonValue], ...] = ()

    @model_serializer(mode="wrap")
    def _omit_empty_items(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Logs of replies without provider items keep the line they always had.
        data: dict[str, object] = handler(self)
        if not self.provider_items:
            data.pop("provider_items", None)
        return data

    @property
    def is_final(self) -> bool:
        """A reply without tool calls ends its round."""
        return not self.tool_calls


class ToolResultEntry(_Entry):
    """The result of one tool call as history keeps it.

    ``content`` is the compressed form that history renders; ``full_ref`` points to the
    full observation in the session's artifacts (``None`` when ``content`` is complete).
    ``child_session`` is the id of the sub-agent session the call ran (``agent_delegate``):
    the link a reader follows to the child (a sibling folder of this session's).
    """

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    tool_name: str
    status: Literal["success", "error"]
    content: str
    full_ref: str | None = None
    original_length: int = 0
    error_class: str | None = None
    child_session: str | None = None

    @model_serializer(mode="wrap")
    def _omit_no_child(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Results of calls that started no sub-agent keep the line they always had.
        data: dict[str, object] = handler(self)
        if self.child_session is None:
            data.pop("child_session", None)
        return data


class ToolStartEntry(_Entry):
    """A tool call is about to run; written durably first so a crash mid-call is known.

    It renders to no message: the request stays exactly what it was without it.
    """

    kind: Literal["tool_start"] = "tool_start"
    call_id: str
    tool_name: str


class ErrorEntry(_Entry):
    """A failure that belongs to no tool call (an unparseable reply, an empty answer)."""

    kind: Literal["error"] = "error"
    error_class: str
    message: str


class SummaryEntry(_Entry):
    """A compaction: entries ``[first_index, end_index)`` left the live view for ``archive``.

    One entry records the whole compaction (one fsynced line, so a crash leaves either no
    compaction or a complete one). It renders as the archived-history summary and takes the
    place of what it archived in the live view. With scope ``steps`` (a cut between step
    groups), user messages in the range from index ``users_from`` on stay in view (older
    ones left with their rounds' steps). A summary is never re-summarized: the summaries at
    log indices ``absorbs`` (the earlier ones in view) leave the live view for this one,
    which carries their content (a rolling summary; logs written before it existed have
    none and keep every summary in view).
    """

    kind: Literal["summary"] = "summary"
    text: str
    archive: str
    first_index: int
    end_index: int
    scope: Literal["rounds", "steps"] = "rounds"
    timed_out: bool = False
    absorbs: tuple[int, ...] = ()
    users_from: int = 0

    def archives(self, record_index: int, entry: Entry) -> bool:
        """Whether this compaction takes the record (``record_index``, ``entry``) out of
        the live view."""
        if isinstance(entry, SummaryEntry):
            return record_index in self.absorbs
        if not self.first_index <= record_index < self.end_index:
            return False
        return not (
            self.scope == "steps"
            and isinstance(entry, UserEntry)
            and record_index >= self.users_from
        )


class PrunedResult(_Entry):
    """One tool result as pruning leaves it: a short stub in place of its content (a
    failed one's ending with its error, R5.1)."""

    index: int
    call_id: str
    tool_name: str
    content: str
    full_ref: str
    status: Literal["success", "error"] = "success"

    @model_serializer(mode="wrap")
    def _omit_success(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # A successful result's stub keeps the line it always had.
        data: dict[str, object] = handler(self)
        if self.status == "success":
            data.pop("status", None)
        return data

    def stand_in(self) -> ToolResultEntry:
        """The tool result this stub stands for, with the stub as its content."""
        return ToolResultEntry(
            call_id=self.call_id,
            tool_name=self.tool_name,
            status=self.status,
            content=self.content,
            full_ref=self.full_ref,
        )


class PrunedCall(_Entry):
    """One assistant reply as pruning leaves it: its calls' long arguments as stubs.

    ``assistant`` is the reply with each long string argument (and each list or object
    that is long as a whole, as its JSON) replaced by a stub naming the artifact (``refs``,
    relative to the session folder) that holds the value byte for byte; the original reply
    stays in the log.
    """

    index: int
    assistant: AssistantEntry
    refs: tuple[str, ...]


class PrunedUser(_Entry):
    """One long user message as pruning leaves it: its start and end as written, the
    middle (a pasted log, a file, an earlier harness's compaction summary) as a stub
    naming the artifact (``ref``, relative to the session folder) that holds it."""

    index: int
    user: UserEntry
    ref: str


class PruneEntry(_Entry):
    """A cache-aware pruning (R7.8): older tool results, call arguments and the middles of
    long user messages shown as stubs.

    One entry records the whole batch. It renders as the stubs' messages (each result in
    its own frame, each reply as itself with stubbed arguments): results first, then
    replies, then user messages, each taking its record's place in the live view; the
    originals stay in the log and in the artifacts the stubs name.
    """

    kind: Literal["prune"] = "prune"
    results: tuple[PrunedResult, ...]
    calls: tuple[PrunedCall, ...] = ()
    users: tuple[PrunedUser, ...] = ()

    def stand_ins(
        self,
    ) -> tuple[tuple[int, ToolResultEntry | AssistantEntry | UserEntry], ...]:
        """``(record index, entry shown in its place)`` in the order the entry renders."""
        return (
            *((r.index, r.stand_in()) for r in self.results),
            *((c.index, c.assistant) for c in self.calls),
            *((u.index, u.user) for u in self.users),
        )


class NoteEntry(_Entry):
    """Context injected once per user turn (lessons, long-term memory, preferences ...)."""

    kind: Literal["note"] = "note"
    source: str
    text: str


class ReminderEntry(_Entry):
    """A harness reminder (plan recitation, 2-action rule, 3-strike) with constant wrapper."""

    kind: Literal["reminder"] = "reminder"
    rule: str
    text: str


Entry = Annotated[
    UserEntry
    | AssistantEntry
    | ToolResultEntry
    | ToolStartEntry
    | ErrorEntry
    | SummaryEntry
    | PruneEntry
    | NoteEntry
    | ReminderEntry,
    Field(discriminator="kind"),
]

ENTRY_ADAPTER: TypeAdapter[Entry] = TypeAdapter(Entry)
