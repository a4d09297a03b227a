"""The agent: one session, a ReAct loop per user turn (R5.2, R7.2, R7.7).

Each step builds the request from the record, asks the model, and appends what happened:
the assistant reply, then each tool result in its history form. The newest full
observation is shown once, live, and never stored. Errors stay in context verbatim and
the loop goes on; the model decides what to do next.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from contextengine.agent.compaction import Compactor
from contextengine.agent.events import (
    AgentEvent,
    Done,
    ErrorEvent,
    PruneEvent,
    RunResult,
    Thinking,
    ToolCallEvent,
    ToolResultEvent,
    UsageEvent,
)
from contextengine.agent.harness import build_harness
from contextengine.agent.hooks import Harness, HookResult
from contextengine.agent.prompts import DEFAULT_SYSTEM_PROMPT, text_protocol_prompt
from contextengine.agent.replies import valid_reply
from contextengine.agent.stats import AgentStats
from contextengine.agent.text_protocol import parse_text_reply
from contextengine.compress.externalize import CompressedRef, Externalizer
from contextengine.compress.observation import ObservationProcessor
from contextengine.compress.prune import Pruner
from contextengine.config import Config
from contextengine.context.builder import ContextBuilder, FullObservation, LiveContext
from contextengine.context.mentions import add_mention_reminders
from contextengine.context.monitor import PrefixMonitor, PrefixReport
from contextengine.context.render import RenderStyle
from contextengine.context.request import Request
from contextengine.context.tokens import count_tokens
from contextengine.errors import ContextEngineError, ProviderError
from contextengine.measure.request_log import RequestLog
from contextengine.measure.usage_log import UsageLog, UsageRecord
from contextengine.memory.injectors import Injector
from contextengine.memory.reboot import REBOOT_NOTICE
from contextengine.memory.rules import STRIKE_RULE
from contextengine.memory.tools import with_memory_tools
from contextengine.memory.working_memory import MEMORY_FILES, WorkingMemory
from contextengine.providers.base import Provider
from contextengine.session.entries import (
    AssistantEntry,
    Entry,
    ErrorEntry,
    ReminderEntry,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
    UserEntry,
)
from contextengine.session.interrupted import close_interrupted_calls
from contextengine.session.layout import DEFAULT_ROOT_NAME, SessionLayout, new_session_id
from contextengine.session.listing import META_FILE
from contextengine.session.log import LogRecord
from contextengine.session.session import Session
from contextengine.tools.classify import classify_error
from contextengine.tools.context import ToolContext
from contextengine.tools.file_delete import TRASH_DIR
from contextengine.tools.mask import ToolMask
from contextengine.tools.modes import NO_TOOLS, MaskRules, mode_mask, mode_of
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.tools.sandbox import SandboxPolicy
from contextengine.tools.web_http import WebPolicy
from contextengine.tools.web_search import search_backend
from contextengine.tools.workspace import Workspace
from contextengine.types import ModelReply, ReasoningDelta, ReplyDone, TextDelta, ToolCall
from contextengine.untrusted import valid_text

MIN_FINAL_ANSWER_CHARS = 10


@dataclass(frozen=True)
class _Interpretation:
    calls: tuple[ToolCall, ...] = ()
    final_answer: str | None = None
    problem: str | None = None


class Agent:
    """One agent session in a workspace; each ``run`` is one user turn (one round)."""

    def __init__(
        self,
        provider: Provider,
        workspace: str | Path,
        config: Config | None = None,
        *,
        system_prompt: str | None = None,
        tools: Toolset | None = None,
        protocol: Literal["native", "text"] = "native",
        session_id: str | None = None,
        harness: Harness | None = None,
        injectors: Sequence[Injector] = (),
        ask_human: Callable[[str], str | None] | None = None,
        mode: str | None = None,
        _session: Session | None = None,
    ) -> None:
        self.provider = provider
        self.config = config if config is not None else Config.load()
        self.workspace = Path(workspace).resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.toolset = tools or (
            with_memory_tools(default_toolset())
            if self.config.flag("working_memory")
            else default_toolset()
        )
        # The mask the agent works under (its mode); MaskRules adds the state rules.
        self.mask: ToolMask | None = None
        self.mask_rules = MaskRules(self.config.flag("masking"))
        if mode or self.config.mode:
            self.set_mode(mode or self.config.mode)
        self._stats = AgentStats()
        self.ask_human = ask_human
        self.session = _session or self._create_session(session_id, protocol)
        protocol = self.session.style.protocol
        base = system_prompt or DEFAULT_SYSTEM_PROMPT
        specs = self.toolset.specs()
        self.builder = ContextBuilder(
            system_prompt=text_protocol_prompt(base, specs) if protocol == "text" else base,
            tools=specs if protocol == "native" else (),
            project_root=self.workspace,
            config=self.config,
        )
        self.monitor = PrefixMonitor()
        self.usage_log = UsageLog(self.session.layout.usage_log)
        self.request_log = (
            RequestLog(self.session.layout.requests) if self.config.record_requests else None
        )
        self.memory = WorkingMemory(
            self.session.directory if self.config.flag("working_memory") else None
        )
        self.tool_context = ToolContext(
            Workspace(
                self.workspace,
                session_dir=self.session.directory,
                session_access={
                    **dict.fromkeys(MEMORY_FILES, "write"),
                    self.session.layout.artifacts.name: "read",
                    TRASH_DIR: "read",
                },
            ),
            memory=self.memory,
            web=WebPolicy.from_config(self.config),
            search=search_backend(self.config),
            sandbox=SandboxPolicy.from_config(
                self.config,
                hidden_paths=(self.workspace / ".contextengine", self.session.directory),
            ),
        )
        self.externalizer = Externalizer(
            self.session.layout.artifacts, self.tool_context.workspace.display
        )
        self.processor = ObservationProcessor(
            self.externalizer,
            mode=self.config.effective_history_mode,
            externalize=self.config.flag("externalize"),
            traits=self.toolset.traits,
        )
        self.harness: Harness = harness or build_harness(
            session=self.session,
            memory=self.memory,
            workspace=self.tool_context.workspace,
            config=self.config,
            model=getattr(provider, "model", ""),
            injectors=injectors,
            traits=self.toolset.traits,
        )
        display = self.tool_context.workspace.display
        self.compactor = Compactor(
            self.session, self.config, display, lambda chunks: self._scaled(_bpe_of(chunks))
        )
        self.pruner = Pruner(self.session, self.config, self.externalizer)
        self.last_input_tokens = 0
        # provider tokens per BPE token of the last main request: estimates of the next
        # request are BPE counts in the provider's units
        self._token_scale = 1.0
        self._calls = 0

    @classmethod
    def resume(
        cls,
        session_dir: str | Path,
        provider: Provider,
        config: Config | None = None,
        *,
        tools: Toolset | None = None,
        mode: str | None = None,
    ) -> Agent:
        """Continue a recorded session (after a crash or restart) with nothing lost.

        Tool calls a crash left without a result get an explicit "interrupted" result
        (never a re-run), so the next request is valid and the model knows what happened.
        ``tools``: the session's own toolset when it was not the default one; ``mode``: a
        preset to continue in (else the config's ``mode``).
        """
        if not Path(session_dir).is_dir():
            raise ContextEngineError(f"{session_dir}: not a session folder")
        session = Session.open(session_dir)
        try:
            meta = json.loads((session.directory / META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ContextEngineError(
                f"{session.directory}: not an agent session ({META_FILE} unreadable: {exc})"
            ) from None
        workspace = meta.get("workspace") if isinstance(meta, dict) else None
        if not isinstance(workspace, str) or not workspace or "\0" in workspace:
            raise ContextEngineError(
                f"{session.directory / META_FILE}: no valid 'workspace' path recorded"
            )
        close_interrupted_calls(session)
        return cls(provider, workspace, config, tools=tools, mode=mode, _session=session)

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
        self.mask = None if name is None else mode_mask(name)

    def stats(self) -> dict[str, Any]:
        """In-process counters: calls by purpose, tokens, cache hit rate, cache breaks by
        cause, compactions, prunes, strikes, tool calls and tool errors by class."""
        return self._stats.as_dict()

    @property
    def session_dir(self) -> Path:
        """The folder holding the session log, usage log, artifacts and memory files."""
        return self.session.directory

    def run(self, message: str) -> RunResult:
        """Run one user turn to its final answer and return the result."""
        for event in self.stream(message):
            if isinstance(event, Done):
                return event.result
        raise ContextEngineError("the agent stopped without a result")

    async def astream(
        self, message: str, cancel: threading.Event | None = None
    ) -> AsyncIterator[AgentEvent]:
        """``stream`` for asyncio code: the loop runs in a worker thread."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[AgentEvent | BaseException | None] = asyncio.Queue()

        def work() -> None:
            try:
                for event in self.stream(message, cancel):
                    loop.call_soon_threadsafe(queue.put_nowait, event)
            except BaseException as exc:  # handed to the consumer, not lost in the thread
                loop.call_soon_threadsafe(queue.put_nowait, exc)
            loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=work, name="contextengine-agent", daemon=True).start()
        while (item := await queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def stream(self, message: str, cancel: threading.Event | None = None) -> Iterator[AgentEvent]:
        """Run one user turn, yielding events; the last event is ``Done``.

        Setting ``cancel`` stops the turn before its next step (a batch of tool calls
        always runs to its end): it ends with ``Done`` and status ``cancelled``.
        """
        for event in self._turn(message, cancel):
            self._stats.observe(event)
            yield event

    def _turn(self, message: str, cancel: threading.Event | None) -> Iterator[AgentEvent]:
        close_interrupted_calls(self.session)  # a turn that died mid-batch in this process
        message = valid_text(message)
        text = add_mention_reminders(message) if self.config.flag("mentions") else message
        incoming = self._scaled(count_tokens(text))
        if self.compactor.needed(self.last_input_tokens + incoming):
            yield from self._compact(LiveContext(tail=self._tail()), incoming)
        round_start = self.session.append(UserEntry(text=text)).index
        yield from self._apply(self.harness.start_turn(text))
        live: dict[int, FullObservation] = {}
        retried_answer = False
        rebooting: str | None = None  # the reboot prompt while a 3-strike reboot is due
        for step in range(self.config.max_steps):
            if cancel is not None and cancel.is_set():
                stopped = RunResult("", self.session_dir, "cancelled", step, _CANCELLED)
                yield from self._finish(stopped)
                return
            yield from self._apply(self.harness.before_step(step))
            context = LiveContext(live, round_start, self._tail())
            if rebooting is None and (decision := self.pruner.decide()) is not None:
                self.pruner.prune(decision)
                yield PruneEvent(
                    len(decision.records),
                    decision.saved_tokens,
                    round(decision.payback_steps, 1),
                    self._calls,
                )
            request = self._build(context, rebooting)
            if self.compactor.needed(self._estimate(request)) and (
                yield from self._compact(context)
            ):
                request = self._build(context, rebooting)
            try:
                reply = yield from self._ask(request)
            except ProviderError as exc:
                yield ErrorEvent("provider_error", str(exc))
                yield from self._finish(RunResult("", self.session_dir, "error", step, str(exc)))
                return
            if rebooting:
                rebooting = None
                self._append_assistant(reply, ())
                hook = self.harness.after_reboot(reply.content)
                yield from self._apply(hook)
                if hook.needs_human is not None:
                    answer = self.ask_human(hook.needs_human) if self.ask_human else None
                    if answer is None:
                        result = RunResult(
                            "", self.session_dir, "needs_human", step + 1, hook.needs_human
                        )
                        yield from self._finish(result)
                        return
                    self.session.append(UserEntry(text=answer))
                continue
            meaning = self._interpret(reply)
            if meaning.problem is not None:
                self._append_assistant(reply, ())
                yield self._error("invalid_reply", meaning.problem)
                continue
            if meaning.final_answer is not None:
                self._append_assistant(reply, ())
                if (
                    len(meaning.final_answer.strip()) < MIN_FINAL_ANSWER_CHARS
                    and not retried_answer
                ):
                    retried_answer = True
                    yield self._error("empty_answer", _SHORT_ANSWER)
                    continue
                yield from self._finish(
                    RunResult(meaning.final_answer, self.session_dir, "completed", step + 1)
                )
                return
            record = self._append_assistant(reply, meaning.calls)
            if self.config.effective_history_mode != "round_scratchpad":
                live = {}
            # Nothing may stand between a reply's tool calls and their results on the wire,
            # so hook entries and a reboot wait until the whole batch has run.
            deferred: list[Entry] = []
            reboot: str | None = None
            assert isinstance(record.entry, AssistantEntry)
            for recorded in record.entry.tool_calls:
                ours = recorded.as_call()
                yield from self._apply(self.harness.before_tool(ours), deferred)
                hook = yield from self._run_tool(ours, live)
                yield from self._apply(hook, deferred)
                reboot = reboot or hook.reboot
            for entry in deferred:
                self.session.append(entry)
            if reboot is not None:
                # Only a constant notice is kept: the prompt is asked once, uncached,
                # instead of being written to the cache and re-read on every later step.
                self.session.append(ReminderEntry(rule=STRIKE_RULE, text=REBOOT_NOTICE))
                rebooting = reboot
        yield from self._finish(RunResult("", self.session_dir, "max_steps", self.config.max_steps))

    def _estimate(self, request: Request) -> int:
        """The request's size in the provider's tokens (BPE, scaled by the last usage)."""
        return self._scaled(_bpe(request))

    def _scaled(self, tokens: int) -> int:
        return int(tokens * self._token_scale)

    def _tail(self) -> str | None:
        return self.harness.task_status()

    def _build(self, context: LiveContext, rebooting: str | None) -> Request:
        if rebooting is None:
            return self.builder.build(
                self.session, context, mask=self.mask_rules.in_force(self.mask)
            )
        return self.builder.build(
            self.session,
            context,
            purpose="reboot",
            mask=NO_TOOLS,
            extra=({"role": "user", "content": rebooting},),
        )

    def _compact(
        self, context: LiveContext, incoming: int = 0
    ) -> Generator[AgentEvent, None, bool]:
        """Compact once; ``incoming``: tokens about to be appended (a new user message)."""

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

        records = sum(self._scaled(_bpe_of(r.chunks)) for r in self.session.live)
        fixed = self._estimate(self.builder.build(self.session, context)) - records + incoming
        compacted = yield from self.compactor.run(summary_request, self._ask_side, fixed)
        if compacted:
            after = self._estimate(self.builder.build(self.session, context))
            self.last_input_tokens = after
            self.compactor.compacted_to(after)
        return compacted

    def _apply(self, hook: HookResult, defer: list[Entry] | None = None) -> Iterator[AgentEvent]:
        if defer is None:
            for entry in hook.entries:
                self.session.append(entry)
        else:
            defer.extend(hook.entries)
        yield from hook.events

    def _finish(self, result: RunResult) -> Iterator[AgentEvent]:
        yield from self._apply(self.harness.end_turn(result))
        yield Done(result)

    def _ask(self, request: Request) -> Generator[AgentEvent, None, ModelReply]:
        report = self.monitor.observe(request)
        started = time.perf_counter()
        reply: ModelReply | None = None
        for event in self.provider.stream(request):
            if isinstance(event, TextDelta):
                yield Thinking(valid_text(event.text))
            elif isinstance(event, ReasoningDelta):
                yield Thinking(valid_text(event.text), reasoning=True)
            elif isinstance(event, ReplyDone):
                reply = valid_reply(event.reply)
        if reply is None:
            raise ProviderError("the provider's stream ended without a reply")
        return (yield from self._account(request, reply, report, started))

    def _ask_side(
        self, request: Request, timeout_s: float
    ) -> Generator[AgentEvent, None, ModelReply | None]:
        """A side call (summary) without streaming; ``None`` when it timed out.

        The call runs in a daemon thread so a hung provider cannot hold the run; a late
        answer is dropped.
        """
        report = self.monitor.observe(request)
        started = time.perf_counter()
        box: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=1)

        def call() -> None:
            try:
                box.put((True, self.provider.complete(request)))
            except BaseException as exc:  # handed to the waiting loop
                box.put((False, exc))

        threading.Thread(target=call, name="contextengine-side-call", daemon=True).start()
        try:
            ok, value = box.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if not ok:
            raise value  # type: ignore[misc]
        return (yield from self._account(request, value, report, started))  # type: ignore[arg-type]

    def _account(
        self, request: Request, reply: ModelReply, report: PrefixReport, started: float
    ) -> Generator[AgentEvent, None, ModelReply]:
        usage = reply.usage
        if not usage.latency_s:
            usage = replace(usage, latency_s=time.perf_counter() - started)
        self._calls += 1
        if request.purpose == "main":
            counted = _bpe(request)
            self.last_input_tokens = usage.input_tokens or counted
            self._token_scale = self.last_input_tokens / max(counted, 1)
        if self.request_log is not None:
            self.request_log.append(request)
        self.usage_log.append(UsageRecord.of(self._calls, request.purpose, usage, report))
        brk = report.cache_break
        yield UsageEvent(
            request.purpose,
            usage.input_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
            usage.output_tokens,
            usage.latency_s,
            report.reusable_chars,
            brk.cause if brk else None,
        )
        return replace(reply, usage=usage)

    def _interpret(self, reply: ModelReply) -> _Interpretation:
        # Structured calls win in both protocols: a provider (or a replay) that returns them
        # has already parsed the action.
        if reply.tool_calls:
            return _Interpretation(calls=reply.tool_calls)
        if self.session.style.protocol == "native":
            return _Interpretation(final_answer=reply.content)
        parsed = parse_text_reply(reply.content)
        if parsed.action is not None:
            return _Interpretation(
                calls=(ToolCall("text", parsed.action.name, parsed.action.arguments_json),)
            )
        return _Interpretation(final_answer=parsed.final_answer, problem=parsed.problem)

    def _append_assistant(self, reply: ModelReply, calls: tuple[ToolCall, ...]) -> LogRecord:
        index = len(self.session.records)
        records = tuple(
            ToolCallRecord(id=f"call_{index}_{k}", name=c.name, arguments_json=c.arguments_json)
            for k, c in enumerate(calls)
        )
        return self.session.append(
            AssistantEntry(text=reply.content, tool_calls=records, reasoning=reply.reasoning)
        )

    def _run_tool(
        self, call: ToolCall, live: dict[int, FullObservation]
    ) -> Generator[AgentEvent, None, HookResult]:
        yield ToolCallEvent(call.id, call.name, call.arguments_json)
        self.session.append(ToolStartEntry(call_id=call.id, tool_name=call.name))
        outcome = self.toolset.execute(call, self.tool_context, self.mask_rules.in_force(self.mask))
        self.mask_rules.observe(call.name, outcome)
        error_class = classify_error(call.name, outcome)
        index = len(self.session.records)
        try:
            arguments = call.arguments()
        except ValueError:
            arguments = {}
        processed = self.processor.process(index, call.name, arguments, outcome)
        self.session.append(
            ToolResultEntry(
                call_id=call.id,
                tool_name=call.name,
                status=outcome.status,
                content=processed.history,
                full_ref=processed.full_ref,
                original_length=processed.original_length,
                error_class=error_class,
            )
        )
        if processed.live != processed.history:
            live[index] = FullObservation(call.name, call.id, processed.live)
        yield ToolResultEvent(call.id, call.name, outcome.status, processed.live[:400], error_class)
        if outcome.error is not None:
            yield ErrorEvent(error_class or outcome.error.code, outcome.error.message)
        return self.harness.after_tool(call, outcome, error_class)

    def _error(self, error_class: str, message: str) -> ErrorEvent:
        self.session.append(ErrorEntry(error_class=error_class, message=message))
        return ErrorEvent(error_class, message)

    def _create_session(
        self, session_id: str | None, protocol: Literal["native", "text"]
    ) -> Session:
        root = Path(self.config.root) if self.config.root else self.workspace / DEFAULT_ROOT_NAME
        if not self.config.root:
            ignore = self.workspace / ".contextengine" / ".gitignore"
            ignore.parent.mkdir(parents=True, exist_ok=True)
            if not ignore.exists():
                ignore.write_text("*\n", encoding="utf-8")
        sid = session_id or new_session_id()
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", self.workspace.name).strip("-.") or "workspace"
        layout = SessionLayout.under(root, self.config.org, self.config.team, name, sid)
        style = RenderStyle(protocol=protocol, diversity=self.config.flag("diversity"))
        meta = {
            "session_id": sid,
            "workspace": str(self.workspace),
            "model": getattr(self.provider, "model", ""),
        }
        return Session.create(
            layout.directory,
            session_id=sid,
            style=style,
            files={META_FILE: json.dumps(meta, indent=1)},
        )


def _bpe(request: Request) -> int:
    """BPE tokens of a request's text (each chunk counted once per process)."""
    return _bpe_of(request.chunks)


def _bpe_of(chunks: Sequence[str]) -> int:
    return sum(count_tokens(chunk) for chunk in chunks)


_CANCELLED = "the turn was stopped (cancelled) before its next step"
_SHORT_ANSWER = (
    "Your final answer was empty or too short. Give the user a complete final answer: "
    "what you did, what you found, and how you checked it."
)
