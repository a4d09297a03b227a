"""The agent: one session, a ReAct loop per user turn (R5.2, R7.2, R7.7).

Each step builds the request from the record, asks the model, and appends what happened:
the assistant reply, then each tool result in its history form. The newest full
observation is shown once, live, and never stored. Errors stay in context verbatim and
the loop goes on; the model decides what to do next.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from contextengine.agent.context_view import ContextPart, context_parts
from contextengine.agent.events import (
    AgentEvent,
    Done,
    ErrorEvent,
    HumanQuestion,
    PruneEvent,
    RunResult,
)
from contextengine.agent.flow import (
    PROCEED,
    AskHuman,
    Finished,
    HumanNeeded,
    RebootDue,
    StepOutcome,
)
from contextengine.agent.hooks import Harness, HookResult
from contextengine.agent.in_thread import in_thread
from contextengine.agent.model_calls import ModelCalls
from contextengine.agent.parts import AgentParts, ToolRunner
from contextengine.agent.stats import AgentStats
from contextengine.agent.subagents import DelegateSettings, SubAgents
from contextengine.agent.tool_step import ToolStep, append_assistant, interpret
from contextengine.compress.externalize import CompressedRef
from contextengine.config import Config
from contextengine.context.builder import FullObservation, LiveContext
from contextengine.context.mentions import add_mention_reminders
from contextengine.context.request import Request
from contextengine.context.tokens import count_tokens
from contextengine.errors import (
    ContextEngineError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
)
from contextengine.memory.injectors import Injector
from contextengine.memory.reboot import REBOOT_NOTICE
from contextengine.memory.rules import STRIKE_RULE
from contextengine.providers.base import Provider
from contextengine.session.entries import (
    AssistantEntry,
    ErrorEntry,
    ReminderEntry,
    SummaryEntry,
    UserEntry,
)
from contextengine.session.interrupted import close_interrupted_calls
from contextengine.session.meta import ProviderChoice, load_meta
from contextengine.session.session import Session
from contextengine.session.store.choice import open_store
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.modes import NO_TOOLS, MaskRules, mode_mask, mode_of
from contextengine.types import ModelReply
from contextengine.untrusted import valid_text

MIN_FINAL_ANSWER_CHARS = 10


class Agent:
    """One agent session in a workspace; each ``run`` is one user turn (one round)."""

    def __init__(
        self,
        provider: Provider,
        workspace: str | Path,
        config: Config | None = None,
        *,
        system_prompt: str | None = None,
        tools: ToolRunner | None = None,
        protocol: Literal["native", "text"] = "native",
        session_id: str | None = None,
        harness: Harness | None = None,
        injectors: Sequence[Injector] = (),
        ask_human: AskHuman | None = None,
        mode: str | None = None,
        provider_choice: ProviderChoice | None = None,
    ) -> None:
        config = config if config is not None else Config.load()
        mask = _mask_of(mode or config.mode)  # an unknown mode fails before a session is made
        parts = AgentParts.defaults(
            provider,
            workspace,
            config,
            tools=tools,
            harness=harness,
            system_prompt=system_prompt,
            protocol=protocol,
            session_id=session_id,
            injectors=injectors,
            provider_choice=provider_choice,
            mode=mode,
        )
        self._assemble(parts, ask_human, mask)

    @classmethod
    def from_parts(
        cls,
        parts: AgentParts,
        *,
        ask_human: AskHuman | None = None,
        mode: str | None = None,
    ) -> Agent:
        """An agent made of ``parts`` (``AgentParts.defaults``, with any part replaced)."""
        agent = cls.__new__(cls)
        agent._assemble(parts, ask_human, _mask_of(mode or parts.config.mode))
        return agent

    def _assemble(
        self,
        parts: AgentParts,
        ask_human: AskHuman | None,
        mask: ToolMask | None,
    ) -> None:
        self.provider = parts.provider
        self.config = parts.config
        self.workspace = parts.workspace
        self.session = parts.session
        self.builder = parts.builder
        self.toolset = parts.toolset
        # The context the tools get is complete before the first call: it runs this
        # agent's sub-agents (the parts cannot, as the agent is made after them).
        delegate = SubAgents(
            self, Agent.from_parts, parts.child, parts.config.settings(DelegateSettings)
        )
        self.tool_context = replace(parts.tool_context, delegate=delegate)
        self.memory = parts.memory
        self.externalizer = parts.externalizer
        self.harness = parts.harness
        self.compactor = parts.compactor
        self.pruner = parts.pruner
        self.gauge = parts.gauge
        self.mcp = parts.mcp
        self.ask_human = ask_human
        # The mask the agent works under (its mode); MaskRules adds the state rules.
        self.mask = mask
        self.mask_rules = MaskRules(self.config.flags.masking, self.toolset)
        self.calls = ModelCalls(
            parts.provider, self.session, self.config.record_requests, self.gauge, parts.allowance
        )
        self.tool_step = ToolStep(
            self.session,
            self.toolset,
            self.tool_context,
            parts.processor,
            self.mask_rules,
            self.harness,
        )
        self._stats = AgentStats()
        self.cancel_token: threading.Event | None = None  # the running turn's; children share it

    @classmethod
    def resume(
        cls,
        session_dir: str | Path,
        provider: Provider,
        config: Config | None = None,
        *,
        tools: ToolRunner | None = None,
        mode: str | None = None,
        ask_human: AskHuman | None = None,
    ) -> Agent:
        """Continue a recorded session (after a crash or restart) with nothing lost.

        Tool calls a crash left without a result get an explicit "interrupted" result
        (never a re-run), so the next request is valid and the model knows what happened.
        ``tools``: the session's own toolset when it was not the default one; ``mode``: a
        preset to continue in (else the config's ``mode``); ``ask_human``: who answers the
        agent's questions (as for ``Agent``).
        """
        if not Path(session_dir).is_dir():
            raise ContextEngineError(f"{session_dir}: not a session folder")
        config = config if config is not None else Config.load()
        session = Session.open(session_dir, open_store(config))
        try:
            workspace = load_meta(session.directory).workspace
            close_interrupted_calls(session)
            parts = AgentParts.defaults(
                provider, workspace, config, session=session, tools=tools, mode=mode
            )
            return cls.from_parts(parts, ask_human=ask_human, mode=mode)
        except BaseException:
            session.close()
            raise

    def close(self) -> None:
        """Release the session log's file handle and close the session's MCP servers
        (``with Agent(...)`` calls this at its end)."""
        try:
            self.session.close()
        finally:
            if self.mcp is not None:
                self.mcp.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def recover(self, ref: CompressedRef | str) -> str:
        """The original text behind a ``compressed_ref`` (object or its JSON), byte for byte."""
        return self.externalizer.recover(
            CompressedRef.from_json(ref) if isinstance(ref, str) else ref
        )

    @property
    def mode(self) -> str | None:
        """The preset the agent's mask is (``CODE`` ...), ``None`` for all tools or a custom mask."""
        return mode_of(self.mask)

    def set_mode(self, name: str | None) -> None:
        """Work in preset ``name`` from the next step on (``None``: all tools); the request's
        ``tools`` stay the same, only the mask changes. Unknown names raise ``ConfigError``."""
        self.mask = _mask_of(name)

    def stats(self) -> dict[str, Any]:
        """In-process counters: calls by purpose, tokens, cache hit rate, cache breaks by
        cause, compactions, prunes, strikes, tool calls and tool errors by class."""
        return self._stats.as_dict()

    @property
    def last_input_tokens(self) -> int:
        """Input tokens of the last main request (as the provider counted them)."""
        return self.gauge.last_input_tokens

    @last_input_tokens.setter
    def last_input_tokens(self, tokens: int) -> None:
        self.gauge.last_input_tokens = tokens

    @property
    def session_dir(self) -> Path:
        """The folder holding the session log, usage log, artifacts and memory files."""
        return self.session.directory

    def context_parts(self) -> tuple[ContextPart, ...]:
        """What the next main request would hold, by part, in tokens and cached tokens."""
        request = self._build(LiveContext(tail=self._tail()), None)
        summaries = {
            chunk
            for record in self.session.live
            if isinstance(record.entry, SummaryEntry)
            for chunk in record.chunks
        }
        return context_parts(
            request,
            self.calls.monitor.previous,
            summaries,
            lambda chunk: self.gauge.scaled(count_tokens(chunk)),
        )

    def compact(self) -> Iterator[AgentEvent]:
        """Compact now, between turns (the CLI's ``/compact``), yielding its events."""
        yield from self._compact(LiveContext(tail=self._tail()), 0)

    def run(self, message: str, cancel: threading.Event | None = None) -> RunResult:
        """Run one user turn to its final answer (or until ``cancel`` is set, as in
        ``stream``) and return the result."""
        for event in self.stream(message, cancel):
            if isinstance(event, Done):
                return event.result
        raise ContextEngineError("the agent stopped without a result")

    async def astream(
        self,
        message: str,
        cancel: threading.Event | None = None,
        *,
        ask_human: AskHuman | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """``stream`` for asyncio code: the loop runs in a worker thread."""
        turn = partial(self.stream, message, cancel, ask_human=ask_human)
        async for event in in_thread(turn, "contextengine-agent"):
            yield event

    def stream(
        self,
        message: str,
        cancel: threading.Event | None = None,
        *,
        recorded_at: int | None = None,
        ask_human: AskHuman | None = None,
    ) -> Iterator[AgentEvent]:
        """Run one user turn, yielding events; the last event is ``Done``.

        Setting ``cancel`` stops the turn before its next step: the calls of a reply not
        started yet when it is set (all of them if it was set while the model answered) are
        recorded with a "not run" result; the turn ends with ``Done`` and status ``cancelled``.
        ``recorded_at``: the turn's user entry is already recorded at this index (a turn
        a dead worker began): continue it from the record instead of appending it again.
        ``ask_human``: who answers the agent's questions in this turn (else the agent's own).
        """
        self.cancel_token = cancel
        try:
            for event in self._turn(message, cancel, recorded_at, ask_human or self.ask_human):
                self._stats.observe(event)
                yield event
        finally:
            self.cancel_token = None

    def _turn(
        self,
        message: str,
        cancel: threading.Event | None,
        recorded_at: int | None,
        ask_human: AskHuman | None,
    ) -> Iterator[AgentEvent]:
        close_interrupted_calls(self.session)  # a turn that died mid-batch in this process
        message = valid_text(message)
        text = add_mention_reminders(message) if self.config.flags.mentions else message
        turn = _Turn(cancel, ask_human, (yield from self._open_round(text, recorded_at)))
        outcome = yield from self._guarded(turn, 0, self._apply(self.harness.start_turn(text)))
        for step in range(self.config.max_steps):
            if isinstance(outcome, Finished):
                break
            outcome = yield from self._guarded(turn, step, self._step(turn, step))
        if not isinstance(outcome, Finished):
            outcome = Finished(RunResult("", self.session_dir, "max_steps", self.config.max_steps))
        yield from self._finish(outcome.result)

    def _open_round(self, text: str, recorded_at: int | None) -> Generator[AgentEvent, None, int]:
        """The index of the turn's user entry: appended now (after compacting when the
        message would not fit), or ``recorded_at`` for a turn already recorded."""
        if recorded_at is not None:
            return recorded_at
        incoming = self.gauge.scaled(count_tokens(text))
        if self.compactor.needed(self.gauge.last_input_tokens + incoming):
            yield from self._compact(LiveContext(tail=self._tail()), incoming)
        return self.session.append(UserEntry(text=text)).index

    def _guarded(
        self,
        turn: _Turn,
        step: int,
        run: Generator[AgentEvent, None, StepOutcome | None],
    ) -> Generator[AgentEvent, None, StepOutcome]:
        """What ``run`` ends with, or what the loop makes of the interrupt it raised."""
        try:
            return (yield from run) or PROCEED
        except RebootDue as due:
            # Only a constant notice is kept: the prompt is asked once, uncached,
            # instead of being written to the cache and re-read on every later step.
            self.session.append(ReminderEntry(rule=STRIKE_RULE, text=REBOOT_NOTICE))
            turn.rebooting = due.prompt
            return PROCEED
        except HumanNeeded as needed:
            return (yield from self._ask_human(turn, needed.question, step))

    def _ask_human(
        self, turn: _Turn, question: str, step: int
    ) -> Generator[AgentEvent, None, StepOutcome]:
        yield HumanQuestion(question)
        answer = turn.ask_human(question) if turn.ask_human else None
        if answer is None:
            return Finished(RunResult("", self.session_dir, "needs_human", step + 1, question))
        self.session.append(UserEntry(text=answer))
        return PROCEED

    def _step(self, turn: _Turn, step: int) -> Generator[AgentEvent, None, StepOutcome]:
        """One model call and what its reply asks for."""
        if turn.cancel is not None and turn.cancel.is_set():
            return Finished(RunResult("", self.session_dir, "cancelled", step, _CANCELLED))
        yield from self._apply(self.harness.before_step(step))
        context = LiveContext(turn.live, turn.round_start, self._tail())
        if turn.rebooting is None:
            yield from self._prune()
        request = yield from self._fitted_request(context, turn.rebooting)
        try:
            reply = yield from self.calls.ask(request)
        except ProviderError as exc:
            yield ErrorEvent(_provider_error_class(exc), str(exc))
            return Finished(RunResult("", self.session_dir, "error", step, str(exc)))
        if turn.rebooting is not None:
            turn.rebooting = None
            append_assistant(self.session, reply, ())
            yield from self._apply(self.harness.after_reboot(reply.content))
            return PROCEED
        return (yield from self._answered(turn, reply, step))

    def _prune(self) -> Iterator[AgentEvent]:
        """Prune the history when the pruner finds it pays back."""
        decision = self.pruner.decide()
        if decision is None:
            return
        self.pruner.prune(decision)
        yield PruneEvent(
            len(decision.records),
            decision.saved_tokens,
            round(decision.payback_steps, 1),
            self.calls.count,
        )

    def _fitted_request(
        self, context: LiveContext, rebooting: str | None
    ) -> Generator[AgentEvent, None, Request]:
        """The step's request, built again after compacting when it would not fit."""
        request = self._build(context, rebooting)
        if not self.compactor.needed(self.gauge.of_request(request)):
            return request
        compacted = yield from self._compact(context)
        return self._build(context, rebooting) if compacted else request

    def _answered(
        self, turn: _Turn, reply: ModelReply, step: int
    ) -> Generator[AgentEvent, None, StepOutcome]:
        """Act on a main reply: refuse it, take its final answer, or run its calls."""
        meaning = interpret(reply, self.session.style.protocol)
        if meaning.problem is not None:
            append_assistant(self.session, reply, ())
            yield self._error("invalid_reply", meaning.problem)
            yield from self._apply(self.harness.after_error("invalid_reply"))
            return PROCEED
        if meaning.final_answer is not None:
            return (yield from self._final_answer(turn, reply, meaning.final_answer, step))
        record = append_assistant(self.session, reply, meaning.calls)
        if self.config.effective_history_mode != "round_scratchpad":
            turn.live = {}
        assert isinstance(record.entry, AssistantEntry)
        yield from self.tool_step.run_batch(
            record.entry.tool_calls, self.mask, turn.live, meaning.dropped, turn.cancel
        )
        return PROCEED

    def _final_answer(
        self, turn: _Turn, reply: ModelReply, answer: str, step: int
    ) -> Generator[AgentEvent, None, StepOutcome]:
        """The turn's result, unless the answer is asked for again (once when cut at
        max_tokens, once when empty or too short)."""
        append_assistant(self.session, reply, ())
        if reply.finish_reason == "length":
            if not turn.retried_cut:
                turn.retried_cut = True
                yield self._error("reply_cut", _CUT_ANSWER)
                return PROCEED
            # asked once already: the user gets the answer, told it is cut
            yield ErrorEvent("reply_cut", _CUT_AGAIN)
        if len(answer.strip()) < MIN_FINAL_ANSWER_CHARS and not turn.retried_answer:
            turn.retried_answer = True
            yield self._error("empty_answer", _SHORT_ANSWER)
            return PROCEED
        return Finished(RunResult(answer, self.session_dir, "completed", step + 1))

    def _tail(self) -> str | None:
        return self.harness.task_status()

    def _build(self, context: LiveContext, rebooting: str | None) -> Request:
        if rebooting is None:
            return self.builder.build(
                self.session, context, mask=self.mask_rules.in_force(self.mask)
            )
        # The reboot prompt stands on its own (objective, plan, end of the progress log):
        # the request is the cached head and the prompt, not the whole history read again.
        return self.builder.build(
            self.session,
            replace(context, tail=None),
            purpose="reboot",
            mask=NO_TOOLS,
            history_records=0,
            extra=({"role": "user", "content": rebooting},),
        )

    def _compact(
        self, context: LiveContext, incoming: int | None = None
    ) -> Generator[AgentEvent, None, bool]:
        """Compact once; ``incoming``: between turns, the tokens of the user message about
        to be appended (``None`` inside a turn, whose round must keep its message)."""

        def summary_request(instruction: str, history_records: int | None) -> Request:
            # The current request's cached prefix (tools, L1, L2, history) and the
            # instruction; the live observation and the tail would only be paid uncached.
            return self.builder.build(
                self.session,
                LiveContext(),
                purpose="summary",
                mask=NO_TOOLS,
                extra=({"role": "user", "content": instruction},),
                history_records=history_records,
            )

        records = sum(self.gauge.of_chunks(r.chunks) for r in self.session.live)
        fixed = (
            self.gauge.of_request(self.builder.build(self.session, context))
            - records
            + (incoming or 0)
        )
        compacted = yield from self.compactor.run(
            summary_request, self.calls.ask_side, fixed, between_turns=incoming is not None
        )
        if compacted:
            after = self.gauge.of_request(self.builder.build(self.session, context))
            self.gauge.last_input_tokens = after
            self.compactor.compacted_to(after)
        return compacted

    def _apply(self, hook: HookResult) -> Generator[AgentEvent, None, None]:
        """Append the hook's entries, emit its events, then raise its interrupt, if any."""
        yield from self._record(hook)
        if hook.interrupt is not None:
            raise hook.interrupt

    def _record(self, hook: HookResult) -> Iterator[AgentEvent]:
        for entry in hook.entries:
            self.session.append(entry)
        yield from hook.events

    def _finish(self, result: RunResult) -> Iterator[AgentEvent]:
        # The turn is over: there is no course left for an interrupt to change.
        yield from self._record(self.harness.end_turn(result))
        yield Done(result)

    def _error(self, error_class: str, message: str) -> ErrorEvent:
        self.session.append(ErrorEntry(error_class=error_class, message=message))
        return ErrorEvent(error_class, message)


@dataclass
class _Turn:
    """What one turn's steps carry from one to the next."""

    cancel: threading.Event | None
    ask_human: AskHuman | None
    round_start: int  # the index of the turn's user entry
    live: dict[int, FullObservation] = field(default_factory=dict)
    retried_answer: bool = False
    retried_cut: bool = False  # a final answer cut at max_tokens is asked for again once
    rebooting: str | None = None  # the reboot prompt while a 3-strike reboot is due


def _provider_error_class(exc: ProviderError) -> str:
    """``provider_unreachable`` for a server that cannot be reached (not a slow one)."""
    unreachable = isinstance(exc, ProviderConnectionError) and not isinstance(
        exc, ProviderTimeoutError
    )
    return "provider_unreachable" if unreachable else "provider_error"


def _mask_of(mode: str | None) -> ToolMask | None:
    return None if mode is None else mode_mask(mode)


_CANCELLED = "the turn was stopped (cancelled) before its next step"
_CUT_ANSWER = (
    "Your final answer was cut off at the reply token limit (max_tokens). Give the complete "
    "final answer again, shorter, so that it fits."
)
_CUT_AGAIN = "the final answer below was cut off at the reply token limit (max_tokens)"
_SHORT_ANSWER = (
    "Your final answer was empty or too short. Give the user a complete final answer: "
    "what you did, what you found, and how you checked it."
)
