"""Closing the tool calls a crash left without a result (R8.6).

The loop appends an assistant reply, then for each of its calls a ``ToolStartEntry``
(fsynced) before running it and a ``ToolResultEntry`` after. A crash can stop that between
any two steps. A call left without a result makes every later request invalid (providers
reject a tool call with no answer), and a model that never saw the result would issue the
command again. So before the session goes on, each open call gets an explicit result:
"may have run" when its start was recorded, "was not run" when it was not. Nothing is
re-run: whether to repeat a call is the model's decision, made with that knowledge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contextengine.session.entries import (
    AssistantEntry,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
)
from contextengine.session.log import LogRecord
from contextengine.session.session import Session

MAY_HAVE_RUN = (
    "interrupted: the agent stopped (a crash or a kill) while this call was running, so its "
    "result was lost. It may have run, fully or in part: check its effects before repeating it."
)
NOT_RUN = (
    "interrupted: the agent stopped (a crash or a kill) before this call started. It was not "
    "run; call it again if it is still needed."
)


@dataclass(frozen=True)
class InterruptedCall:
    """A recorded tool call without a result, and whether it had started."""

    call: ToolCallRecord
    started: bool

    def result(self) -> ToolResultEntry:
        """The explicit result that closes the call."""
        return ToolResultEntry(
            call_id=self.call.id,
            tool_name=self.call.name,
            status="error",
            content=MAY_HAVE_RUN if self.started else NOT_RUN,
        )


def interrupted_calls(records: Sequence[LogRecord]) -> list[InterruptedCall]:
    """Calls of the last reply that have no result, in call order.

    Only a trailing batch (the reply followed by nothing but starts and results) can be
    closed by appending: its results must follow it with nothing in between.
    """
    position = len(records) - 1
    while position >= 0 and isinstance(records[position].entry, ToolStartEntry | ToolResultEntry):
        position -= 1
    if position < 0 or not isinstance(reply := records[position].entry, AssistantEntry):
        return []
    after = [r.entry for r in records[position + 1 :]]
    answered = {e.call_id for e in after if isinstance(e, ToolResultEntry)}
    started = {e.call_id for e in after if isinstance(e, ToolStartEntry)}
    return [
        InterruptedCall(call, call.id in started)
        for call in reply.tool_calls
        if call.id not in answered
    ]


def close_interrupted_calls(session: Session) -> list[LogRecord]:
    """Append an explicit result for every call a crash left open; the appended records."""
    return [session.append(call.result()) for call in interrupted_calls(session.records)]
