"""pydantic-ai: a capability that sends each model request as the engine builds it.

    agent = Agent(model, capabilities=[ContextEngine(ContextMirror(".ce-sessions"))])

``ContextEngine.before_model_request`` converts the run's messages to the neutral form,
lets the ``ContextMirror`` rebuild them and hands the result to this request only: the
run's own history (``RunContext.messages``) stays as pydantic-ai recorded it, so the next
request extends the previous one. It also sets ``openai_prompt_cache_key`` to the mirror's
session key (``model_settings`` gives the same setting for an ``Agent``'s defaults).
pydantic-ai v2 replaced ``history_processors=[...]`` with capabilities; ``ProcessHistory``
would write the rebuilt messages back into the run's history, this one does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contextengine.integrations.mirror import ERROR_STATUS, ContextMirror, require

require("pydantic_ai", "pydantic-ai")

from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402
from pydantic_ai.tools import RunContext  # noqa: E402

Message = dict[str, Any]


def model_settings(mirror: ContextMirror) -> ModelSettings:
    """Model settings that carry the mirror's session key as OpenAI's ``prompt_cache_key``."""
    return ModelSettings(openai_prompt_cache_key=mirror.session_key)


@dataclass
class ContextEngine(AbstractCapability[Any]):
    """Applies the engine's rules to every model request of a pydantic-ai agent."""

    mirror: ContextMirror

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """This request's messages rebuilt by the mirror, with the session key set."""
        names = _tool_names(request_context.messages)
        neutral = list(_to_neutral(request_context.messages))
        rebuilt = _from_neutral(self.mirror.view(neutral), names, request_context.messages)
        settings = {**(request_context.model_settings or {}), **model_settings(self.mirror)}
        return replace(request_context, messages=rebuilt, model_settings=settings)

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not serializable: it holds a live mirror."""
        return None


def _tool_names(messages: Sequence[ModelMessage]) -> dict[str, str]:
    return {
        part.tool_call_id: part.tool_name
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


def _to_neutral(messages: Sequence[ModelMessage]) -> Iterator[Message]:
    """pydantic-ai messages as OpenAI chat messages (one per request part)."""
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            yield {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                yield {"role": "system", "content": part.content}
            elif isinstance(part, UserPromptPart):
                content = part.content
                yield {
                    "role": "user",
                    "content": content if isinstance(content, str) else str(content),
                }
            elif isinstance(part, ToolReturnPart):
                yield {
                    "role": "tool",
                    "tool_call_id": part.tool_call_id,
                    "content": part.model_response_str(),
                }
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                yield {
                    "role": "tool",
                    "tool_call_id": part.tool_call_id,
                    "content": part.model_response(),
                    ERROR_STATUS: "error",
                }
            elif isinstance(part, RetryPromptPart):
                yield {"role": "user", "content": part.model_response()}


def _from_neutral(
    messages: Sequence[Mapping[str, Any]], names: dict[str, str], original: Sequence[ModelMessage]
) -> list[ModelMessage]:
    """OpenAI chat messages as pydantic-ai messages (runs of non-assistant ones merged into
    one request); the first request keeps the original's instructions."""
    out: list[ModelMessage] = []
    parts: list[ModelRequestPart] = []
    for message in messages:
        role = message["role"]
        if role == "assistant":
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            out.append(ModelResponse(parts=_response_parts(message)))
        elif role == "tool":
            call_id = message["tool_call_id"]
            name = names.get(call_id, "tool")
            parts.append(ToolReturnPart(name, message["content"], tool_call_id=call_id))
        elif role == "system":
            parts.append(SystemPromptPart(message["content"]))
        else:
            parts.append(UserPromptPart(message["content"]))
    if parts:
        out.append(ModelRequest(parts=parts))
    first = next((m for m in original if isinstance(m, ModelRequest)), None)
    if first is not None and out and isinstance(out[0], ModelRequest):
        out[0] = replace(out[0], instructions=first.instructions)
    return out


def _response_parts(message: Mapping[str, Any]) -> list[Any]:
    parts: list[Any] = [TextPart(message["content"])] if message.get("content") else []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        parts.append(ToolCallPart(function["name"], function["arguments"], tool_call_id=call["id"]))
    return parts
