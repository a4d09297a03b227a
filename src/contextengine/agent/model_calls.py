"""The loop's model calls: streamed main calls, side calls under a timeout, their accounting.

Every call is observed by the prefix monitor, logged (usage, and the request itself when
``record_requests``), and reported as a ``UsageEvent``. The last main call's usage sets
the scale from BPE counts to the provider's tokens (``TokenGauge``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import replace

from contextengine.agent.allowance import Allowance
from contextengine.agent.events import AgentEvent, ModelCallEvent, Thinking, UsageEvent
from contextengine.agent.replies import valid_reply
from contextengine.agent.request_log import RequestLog
from contextengine.agent.usage_log import UsageLog, UsageRecord
from contextengine.context.monitor import PrefixMonitor, PrefixReport
from contextengine.context.request import Request
from contextengine.context.tokens import count_tokens
from contextengine.errors import ProviderError
from contextengine.providers.base import Provider
from contextengine.session.session import Session
from contextengine.types import ModelReply, ReasoningDelta, ReplyDone, TextDelta
from contextengine.untrusted import valid_text


class TokenGauge:
    """Sizes in the provider's tokens: BPE counts scaled by the last main call's usage."""

    def __init__(self) -> None:
        self.last_input_tokens = 0
        # provider tokens per BPE token of the last main request: estimates of the next
        # request are BPE counts in the provider's units
        self._scale = 1.0

    def scaled(self, tokens: int) -> int:
        """``tokens`` BPE tokens in the provider's units."""
        return int(tokens * self._scale)

    def of_chunks(self, chunks: Sequence[str]) -> int:
        """The size of rendered chunks in the provider's units."""
        return self.scaled(bpe_of(chunks))

    def of_request(self, request: Request) -> int:
        """The request's size in the provider's tokens (BPE, scaled by the last usage)."""
        return self.scaled(bpe(request))

    def observe(self, request: Request, input_tokens: int) -> None:
        """Take the usage of a main call: its input tokens and the scale they imply."""
        counted = bpe(request)
        self.last_input_tokens = input_tokens or counted
        self._scale = self.last_input_tokens / max(counted, 1)


class ModelCalls:
    """Asks the provider and accounts for every call (monitor, logs, usage events)."""

    def __init__(
        self,
        provider: Provider,
        session: Session,
        record_requests: bool,
        gauge: TokenGauge,
        allowance: Allowance | None = None,
    ) -> None:
        self.provider = provider
        self.gauge = gauge
        self.allowance = allowance  # charged with every call's cost
        self.monitor = PrefixMonitor()
        self.usage_log = UsageLog(session.stored.append_usage)
        self.request_log = RequestLog(session.layout.requests) if record_requests else None
        self.count = 0

    def ask(self, request: Request) -> Generator[AgentEvent, None, ModelReply]:
        """A streamed call: yields ``Thinking`` deltas, returns the reply."""
        report = self.monitor.observe(request)
        yield ModelCallEvent(request.purpose, self.gauge.of_request(request))
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

    def ask_side(
        self, request: Request, timeout_s: float
    ) -> Generator[AgentEvent, None, ModelReply | None]:
        """A side call (summary) without streaming; ``None`` when it timed out.

        The call runs in a daemon thread so a hung provider cannot hold the run; a late
        answer is dropped.
        """
        report = self.monitor.observe(request)
        yield ModelCallEvent(request.purpose, self.gauge.of_request(request))
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
        self.count += 1
        if request.purpose == "main":
            self.gauge.observe(request, usage.input_tokens)
        if self.allowance is not None:
            self.allowance.observe(request.purpose, usage)
        if self.request_log is not None:
            self.request_log.append(request)
        self.usage_log.append(UsageRecord.of(self.count, request.purpose, usage, report))
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


def bpe(request: Request) -> int:
    """BPE tokens of a request's text (each chunk counted once per process)."""
    return bpe_of(request.chunks)


def bpe_of(chunks: Sequence[str]) -> int:
    """BPE tokens of rendered chunks."""
    return sum(count_tokens(chunk) for chunk in chunks)
