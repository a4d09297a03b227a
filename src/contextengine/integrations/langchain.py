"""LangChain v1: an agent middleware that sends each model call as the engine builds it.

    agent = create_agent(model, tools, middleware=[ContextEngineMiddleware(ContextMirror(".ce"))])

``wrap_model_call`` converts the request's messages to the neutral form, lets the
``ContextMirror`` rebuild them and hands the call a request overridden with them: the
agent's state keeps its own messages, so the next call extends the previous one. The
call's ``model_settings`` get ``prompt_cache_key`` (the mirror's session key), which
``ChatOpenAI`` passes to the API.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from contextengine.canonical import canonical_obj
from contextengine.integrations.mirror import ERROR_STATUS, ContextMirror, require

require("langchain", "langchain")

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

Message = dict[str, Any]


class ContextEngineMiddleware(AgentMiddleware):
    """Applies the engine's rules to every model call of a LangChain v1 agent."""

    def __init__(self, mirror: ContextMirror) -> None:
        super().__init__()
        self.mirror = mirror

    def rebuild(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its messages rebuilt by the mirror and the session key set."""
        names = _tool_names(request.messages)
        rebuilt = _from_neutral(self.mirror.view(list(_to_neutral(request.messages))), names)
        settings = {**request.model_settings, "prompt_cache_key": self.mirror.session_key}
        return request.override(messages=rebuilt, model_settings=settings)

    def wrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]
    ) -> ModelResponse:
        """Call the model with the rebuilt request."""
        return handler(self.rebuild(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """Call the model with the rebuilt request (async agents)."""
        return await handler(self.rebuild(request))


def _tool_names(messages: Sequence[BaseMessage]) -> dict[str, str]:
    return {
        call["id"]: call["name"]
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call.get("id")
    }


def _to_neutral(messages: Sequence[BaseMessage]) -> Iterator[Message]:
    """LangChain messages as OpenAI chat messages."""
    for message in messages:
        text = message.text if isinstance(message.text, str) else message.text()
        if isinstance(message, AIMessage):
            calls = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
                }
                for call in message.tool_calls
            ]
            yield {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
        elif isinstance(message, ToolMessage):
            tool: Message = {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
            if message.status == "error":
                tool[ERROR_STATUS] = "error"
            yield tool
        elif isinstance(message, SystemMessage):
            yield {"role": "system", "content": text}
        else:
            yield {"role": "user", "content": text}


def _from_neutral(messages: Sequence[Mapping[str, Any]], names: dict[str, str]) -> list[AnyMessage]:
    """OpenAI chat messages as LangChain messages (tool arguments as sorted-key dicts)."""
    out: list[AnyMessage] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "assistant":
            calls, invalid = [], []
            for call in message.get("tool_calls") or ():
                name, raw = call["function"]["name"], call["function"]["arguments"]
                try:
                    calls.append(
                        {"name": name, "args": canonical_obj(json.loads(raw)), "id": call["id"]}
                    )
                except ValueError:
                    invalid.append({"name": name, "args": raw, "id": call["id"], "error": None})
            out.append(AIMessage(content=content, tool_calls=calls, invalid_tool_calls=invalid))
        elif role == "tool":
            call_id = message["tool_call_id"]
            out.append(ToolMessage(content=content, tool_call_id=call_id, name=names.get(call_id)))
        elif role == "system":
            out.append(SystemMessage(content=content))
        else:
            out.append(HumanMessage(content=content))
    return out
