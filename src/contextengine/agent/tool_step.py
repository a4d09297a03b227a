"""A reply's meaning and its tool calls: interpreted, recorded, run, their results appended.

A tool result is appended in its history form (compressed or externalized); the full
observation is kept live for the next request only when it differs from that form.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Literal

from contextengine.agent.events import (
    AgentEvent,
    ErrorEvent,
    RefSummary,
    ToolCallEvent,
    ToolResultEvent,
)
from contextengine.agent.flow import InterruptFlow
from contextengine.agent.hooks import Harness, HookResult
from contextengine.agent.parts import ToolRunner
from contextengine.agent.text_protocol import parse_text_reply
from contextengine.compress.externalize import REF_TYPE, CompressedRef, UnrecoverableRef
from contextengine.compress.observation import ObservationProcessor
from contextengine.context.builder import FullObservation
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
)
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import classify_error
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.modes import MaskRules
from contextengine.tools.agent_delegate import CHILD_SESSION
from contextengine.tools.context import ToolContext
from contextengine.types import ModelReply, ToolCall

PREVIEW_CHARS = 400  # of a result, in its live event: the event stays small
# A reply's calls beyond this many are not run: the first one past it is recorded with an
# error result saying how many were dropped, the rest are not recorded (each recorded
# call costs a durable append, so 10,000 calls would keep the turn busy for minutes).
MAX_CALLS_PER_REPLY = 64
_REF_START = f'{{"_type":"{REF_TYPE}"'


@dataclass(frozen=True)
class Interpretation:
    """What a reply asks for: tool calls, a final answer, or a problem to tell the model."""

    calls: tuple[ToolCall, ...] = ()
    final_answer: str | None = None
    problem: str | None = None
    dropped: int = 0  # calls past MAX_CALLS_PER_REPLY + 1, neither recorded nor run


def _capped_calls(calls: tuple[ToolCall, ...]) -> Interpretation:
    """The calls to record: all of them, or the first ``MAX_CALLS_PER_REPLY`` + 1."""
    kept = calls[: MAX_CALLS_PER_REPLY + 1]
    return Interpretation(calls=kept, dropped=len(calls) - len(kept))


def interpret(reply: ModelReply, protocol: Literal["native", "text"]) -> Interpretation:
    """The reply's meaning under the session's protocol."""
    # Structured calls win in both protocols: a provider (or a replay) that returns them
    # has already parsed the action.
    if reply.tool_calls:
        return _capped_calls(reply.tool_calls)
    if protocol == "native" or reply.ends_turn:
        return Interpretation(final_answer=reply.content)
    parsed = parse_text_reply(reply.content)
    if parsed.action is not None:
        return Interpretation(
            calls=(ToolCall("text", parsed.action.name, parsed.action.arguments_json),)
        )
    return Interpretation(final_answer=parsed.final_answer, problem=parsed.problem)


def append_assistant(session: Session, reply: ModelReply, calls: tuple[ToolCall, ...]) -> LogRecord:
    """Append the reply with its calls, each under an id made from the record's index:
    ``c<index>``, and ``c<index>_<k>`` for the reply's further calls (an id is paid twice on
    every later request, in the call and in its result)."""
    index = len(session.records)
    records = tuple(
        ToolCallRecord(
            id=f"c{index}_{k}" if k else f"c{index}", name=c.name, arguments_json=c.arguments_json
        )
        for k, c in enumerate(calls)
    )
    return session.append(
        AssistantEntry(
            text=reply.content,
            tool_calls=records,
            reasoning=reply.reasoning,
            provider_items=reply.provider_items,
        )
    )


class ToolStep:
    """Runs a reply's tool calls one at a time and appends each result."""

    def __init__(
        self,
        session: Session,
        toolset: ToolRunner,
        tool_context: ToolContext,
        processor: ObservationProcessor,
        mask_rules: MaskRules,
        harness: Harness,
    ) -> None:
        self.session = session
        self.toolset = toolset
        self.tool_context = tool_context
        self.processor = processor
        self.mask_rules = mask_rules
        self.harness = harness

    def run_batch(
        self,
        calls: Sequence[ToolCallRecord],
        mask: ToolMask | None,
        live: dict[int, FullObservation],
        dropped: int = 0,
        cancel: threading.Event | None = None,
    ) -> Generator[AgentEvent, None, None]:
        """Run a reply's calls in order, then raise the first interrupt a hook gave.

        A call past ``MAX_CALLS_PER_REPLY`` is not run: its result is an error naming the
        cap and the ``dropped`` calls after it. Once ``cancel`` is set - while the model
        answered or while the batch runs - the calls left get a "not run" result instead of
        running (a cancel waits for at most the one call running, not the batch), so the
        history stays valid for the provider and for crash-resume.
        Nothing may stand between a reply's tool calls and their results on the wire, so
        the hooks' entries are appended after the whole batch has run.
        """
        deferred: list[Entry] = []
        interrupt: InterruptFlow | None = None
        for number, recorded in enumerate(calls, 1):
            call = recorded.as_call()
            before = self.harness.before_tool(call)
            deferred.extend(before.entries)
            yield from before.events
            interrupt = interrupt or before.interrupt
            refused = _over_cap(len(calls) + dropped) if number > MAX_CALLS_PER_REPLY else None
            if cancel is not None and cancel.is_set():
                refused = _CANCELLED
            hook = yield from self.run(call, mask, live, refused)
            deferred.extend(hook.entries)
            yield from hook.events
            interrupt = interrupt or hook.interrupt
        for entry in deferred:
            self.session.append(entry)
        if interrupt is not None:
            raise interrupt

    def run(
        self,
        call: ToolCall,
        mask: ToolMask | None,
        live: dict[int, FullObservation],
        refused: ToolOutcome | None = None,
    ) -> Generator[AgentEvent, None, HookResult]:
        """Run ``call`` under ``mask`` (or take ``refused`` as its outcome without running
        it), append its result, and return the harness's answer."""
        session = self.session
        yield ToolCallEvent(call.id, call.name, call.arguments_json)
        session.append(ToolStartEntry(call_id=call.id, tool_name=call.name))
        outcome = refused or self.toolset.execute(
            call, self.tool_context, self.mask_rules.in_force(mask)
        )
        self.mask_rules.observe(call.name, outcome)
        error_class = classify_error(call.name, outcome)
        index = len(session.records)
        arguments = call.arguments_or_empty()
        processed = self.processor.process(index, call.name, arguments, outcome)
        session.append(
            ToolResultEntry(
                call_id=call.id,
                tool_name=call.name,
                status=outcome.status,
                content=processed.history,
                full_ref=processed.full_ref,
                original_length=processed.original_length,
                error_class=error_class,
                child_session=_child_session(outcome),
            )
        )
        if processed.live != processed.history:
            live[index] = FullObservation(call.name, call.id, processed.live)
        preview = processed.live[:PREVIEW_CHARS]
        ref = _ref_summary(processed.live)
        yield ToolResultEvent(call.id, call.name, outcome.status, preview, error_class, ref)
        if outcome.error is not None:
            yield ErrorEvent(error_class or outcome.error.code, outcome.error.message)
        return self.harness.after_tool(call, outcome, error_class)


_CANCELLED = ToolOutcome.fail("limit_reached", "Not run: the turn was cancelled.")


def _over_cap(made: int) -> ToolOutcome:
    """The result of the first call past the cap: it and the ones after it were not run."""
    return ToolOutcome.fail(
        "limit_reached",
        f"Not run: this reply made {made} tool calls and at most {MAX_CALLS_PER_REPLY} run "
        f"per reply; this call and the {made - MAX_CALLS_PER_REPLY - 1} after it were "
        "dropped. Make them in later replies if they are still needed.",
    )


def _ref_summary(text: str) -> RefSummary | None:
    """What the card of a result that is a compressed ref (its first line) shows."""
    if not text.startswith(_REF_START):
        return None
    try:
        ref = CompressedRef.from_json(text.split("\n", 1)[0])
    except UnrecoverableRef:
        return None
    return RefSummary(ref.type, ref.title, ref.original_length, ref.path, ref.url)


def _child_session(outcome: ToolOutcome) -> str | None:
    """The sub-agent session a call ran, as its outcome names it."""
    child = outcome.data.get(CHILD_SESSION)
    return child if isinstance(child, str) else None
