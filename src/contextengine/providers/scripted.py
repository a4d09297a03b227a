"""A scripted model for tests and demos: deterministic replies, every request kept.

Usage is computed from the request itself: input tokens are the ``len // 3`` estimate
and cached tokens the estimate of the prefix shared with the previous request, so the
accounting path runs end to end without a network.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from contextengine.canonical import canonical_json
from contextengine.context.monitor import common_prefix_chars
from contextengine.context.request import Request
from contextengine.context.tokens import estimate_tokens
from contextengine.errors import ConfigError, ProviderError, ScriptExhaustedError
from contextengine.providers.base import StreamingProvider
from contextengine.types import (
    FinishReason,
    ModelReply,
    ReplyDone,
    ReplyEvent,
    TextDelta,
    ToolCall,
    Usage,
)

ScriptedResponse = Mapping[str, Any]
Script = Sequence[ScriptedResponse] | Callable[[Request], ScriptedResponse]

_KNOWN_KEYS = {"content", "tool_calls", "reasoning", "finish_reason"}


class ScriptedProvider(StreamingProvider):
    """Answers from a list of responses (in order) or a callable ``(request) -> response``.

    A response is ``{"content": str, "tool_calls": [{"name": str, "arguments": dict}]}``
    (either key optional; ``reasoning`` too, and ``finish_reason``, e.g. ``length`` for a
    reply cut at max_tokens). ``requests`` keeps every request received,
    summary and reboot calls included.
    """

    def __init__(self, responses: Script, model: str = "scripted") -> None:
        self.model = model
        self._script = responses
        self._next = 0
        self.requests: list[Request] = []

    def stream(self, request: Request) -> Iterator[ReplyEvent]:
        """Yield the next scripted reply (its text first, then the whole reply)."""
        previous = self.requests[-1] if self.requests else None
        self.requests.append(request)
        response = self._response(request)
        reply = _to_reply(response, self._next - 1, self._usage(previous, request, response))
        if reply.content:
            yield TextDelta(reply.content)
        yield ReplyDone(reply)

    def _response(self, request: Request) -> ScriptedResponse:
        number = self._next
        self._next += 1
        if callable(self._script):
            return self._script(request)
        if number >= len(self._script):
            raise ScriptExhaustedError(
                f"scripted provider: asked for reply {number + 1}, "
                f"but the script has only {len(self._script)}"
            )
        return self._script[number]

    def _usage(
        self, previous: Request | None, request: Request, response: ScriptedResponse
    ) -> Usage:
        cached = common_prefix_chars(previous, request)[0] if previous is not None else 0
        output = str(response.get("content") or "") + json.dumps(response.get("tool_calls") or [])
        return Usage(
            input_tokens=estimate_tokens(request.total_chars),
            cached_tokens=estimate_tokens(cached),
            output_tokens=estimate_tokens(output),
            model=self.model,
        )


def _to_reply(response: ScriptedResponse, number: int, usage: Usage) -> ModelReply:
    where = f"scripted response {number + 1}"
    if not isinstance(response, Mapping):
        raise ProviderError(f"{where}: expected a dict, got {type(response).__name__}")
    unknown = set(response) - _KNOWN_KEYS
    if unknown:
        raise ProviderError(
            f"{where}: unknown keys {sorted(unknown)} (known: {sorted(_KNOWN_KEYS)})"
        )
    content = response.get("content") or ""
    if not isinstance(content, str):
        raise ProviderError(f"{where}: 'content' must be a string")
    calls = []
    for k, call in enumerate(response.get("tool_calls") or []):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ProviderError(f"{where}: tool_calls[{k}] needs a string 'name'")
        args = call.get("arguments", {})
        arguments_json = args if isinstance(args, str) else canonical_json(args)
        calls.append(
            ToolCall(id=f"scripted_{number}_{k}", name=call["name"], arguments_json=arguments_json)
        )
    finish: FinishReason = response.get("finish_reason") or ("tool_calls" if calls else "stop")
    if finish not in get_args(FinishReason):
        raise ProviderError(f"{where}: 'finish_reason' must be one of {get_args(FinishReason)}")
    return ModelReply(
        content=content,
        tool_calls=tuple(calls),
        reasoning=str(response.get("reasoning") or ""),
        usage=usage,
        finish_reason=finish,
    )


class ReplayedScript(ScriptedProvider):
    """Replies chosen by the request alone: response ``n mod len`` after ``n`` assistant
    messages (numbered ``n``, so call ids stay unique in the session). Any process, a worker
    continuing another's turn too, answers the same request the same way."""

    def __init__(self, responses: Sequence[ScriptedResponse], model: str) -> None:
        super().__init__(responses, model)
        self._replies = responses

    def _response(self, request: Request) -> ScriptedResponse:
        said = sum(1 for m in request.messages if m["role"] == "assistant")
        self._next = said + 1
        return self._replies[said % len(self._replies)]


def scripted_from_file(path: Path) -> ScriptedProvider:
    """The provider ``scripted:FILE`` names: a JSON list of replies, replayed every turn."""
    try:
        responses = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"scripted provider {path}: cannot read a JSON list ({exc})") from None
    if not isinstance(responses, list) or not responses:
        raise ConfigError(f"scripted provider {path}: expected a non-empty JSON list of replies")
    return ReplayedScript(responses, model=f"scripted:{path.name}")
