"""Events an agent run emits, one type per SSE event name (R12.1).

The CLI renders them, the server streams them as SSE; the loop never knows which.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar, Literal

from contextengine.untrusted import JSONObject

RunStatus = Literal["completed", "max_steps", "needs_human", "error", "cancelled"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of one ``Agent.run`` (one user turn)."""

    final_answer: str
    session_dir: Path
    status: RunStatus = "completed"
    steps: int = 0
    error: str | None = None


@dataclass(frozen=True)
class _Event:
    type: ClassVar[str]

    def payload(self) -> JSONObject:
        """JSON-ready fields of the event."""
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class Thinking(_Event):
    """A piece of model text (or reasoning) as it streams."""

    type: ClassVar[str] = "thinking"
    text: str
    reasoning: bool = False


@dataclass(frozen=True)
class ModelCallEvent(_Event):
    """A model call starts: its purpose and the request's estimated input tokens (the
    ``usage`` event that ends it has the provider's count)."""

    type: ClassVar[str] = "model_call"
    purpose: str
    input_tokens: int


@dataclass(frozen=True)
class ToolCallEvent(_Event):
    """The model asked for a tool call."""

    type: ClassVar[str] = "tool_call"
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RefSummary:
    """The compressed ref a tool result became, whole (a preview may cut it short)."""

    kind: str
    title: str
    size: int
    path: str | None = None
    url: str | None = None


@dataclass(frozen=True)
class ToolResultEvent(_Event):
    """A tool call finished (``preview`` is the start of what the model sees; ``ref`` the
    compressed ref it became, if any)."""

    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    status: str
    preview: str
    error_class: str | None = None
    ref: RefSummary | None = None


@dataclass(frozen=True)
class ErrorEvent(_Event):
    """Something failed and stays in context (a tool error, an invalid reply ...)."""

    type: ClassVar[str] = "error"
    error_class: str
    message: str


@dataclass(frozen=True)
class MemoryUpdate(_Event):
    """A working-memory file changed (R8.7)."""

    type: ClassVar[str] = "memory_update"
    file: str
    content: str


@dataclass(frozen=True)
class CompactionEvent(_Event):
    """Progress of a compaction (started, summarizing, done, timed out)."""

    type: ClassVar[str] = "compaction"
    stage: str
    message: str
    details: JSONObject = field(default_factory=dict)


@dataclass(frozen=True)
class PruneEvent(_Event):
    """Old context became stubs (R7.8): how many entries (tool results, and replies whose
    long arguments or reasoning were stubbed), tokens saved, the expected payback (in model
    calls) and the session's model calls before it."""

    type: ClassVar[str] = "prune"
    results: int
    saved_tokens: int
    payback_steps: float
    step: int = 0


@dataclass(frozen=True)
class UsageEvent(_Event):
    """Token accounting of one model call and its prefix-monitor result."""

    type: ClassVar[str] = "usage"
    purpose: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    latency_s: float
    reusable_chars: int
    cache_break: str | None = None


@dataclass(frozen=True)
class HumanQuestion(_Event):
    """The agent hands over to a human: the turn waits for an answer to ``question``
    (or ends with status ``needs_human`` when nobody can answer)."""

    type: ClassVar[str] = "question"
    question: str


@dataclass(frozen=True)
class Done(_Event):
    """The run ended."""

    type: ClassVar[str] = "done"
    result: RunResult


AgentEvent = (
    Thinking
    | ModelCallEvent
    | ToolCallEvent
    | ToolResultEvent
    | ErrorEvent
    | MemoryUpdate
    | CompactionEvent
    | PruneEvent
    | UsageEvent
    | HumanQuestion
    | Done
)
