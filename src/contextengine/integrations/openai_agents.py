"""OpenAI Agents SDK: a ``call_model_input_filter`` that sends each call as the engine builds it.

    mirror = ContextMirror(".ce-sessions")
    Runner.run_sync(agent, task, run_config=run_config(mirror))

``ContextEngineFilter`` converts the call's input items (messages, function calls and
their outputs) to the neutral form, lets the ``ContextMirror`` rebuild them and returns
them for this call only: the run keeps its own items, so the next call extends the
previous one. ``model_settings`` carries the mirror's session key as ``prompt_cache_key``.
Reasoning items are dropped (a Chat Completions model does not send them back); a call
whose input holds any other kind of item is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from contextengine.integrations.mirror import ContextMirror, require

require("agents", "openai-agents")

from agents import ModelSettings, RunConfig  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

Message = dict[str, Any]
Item = Any
_SKIPPED = frozenset({"reasoning"})


def model_settings(mirror: ContextMirror) -> ModelSettings:
    """Model settings that carry the mirror's session key as ``prompt_cache_key``."""
    return ModelSettings(extra_args={"prompt_cache_key": mirror.session_key})


def run_config(mirror: ContextMirror, **settings: Any) -> RunConfig:
    """A ``RunConfig`` with the input filter and the session key (``settings``: more fields)."""
    return RunConfig(
        call_model_input_filter=ContextEngineFilter(mirror),
        model_settings=model_settings(mirror),
        **settings,
    )


class ContextEngineFilter:
    """``RunConfig.call_model_input_filter``: the engine's rules on every model call."""

    def __init__(self, mirror: ContextMirror) -> None:
        self.mirror = mirror

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The call's input rebuilt by the mirror (unchanged when it holds unknown items)."""
        items = data.model_data.input
        neutral = _to_neutral(items)
        if neutral is None:
            return data.model_data
        rebuilt = list(_from_neutral(self.mirror.view(neutral)))
        return ModelInputData(input=rebuilt, instructions=data.model_data.instructions)


def _to_neutral(items: Sequence[Item]) -> list[Message] | None:
    """Input items as OpenAI chat messages; ``None`` if an item has no chat form."""
    out: list[Message] = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        kind = item.get("type")
        if kind in _SKIPPED:
            continue
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or ""},
            }
            if out and out[-1]["role"] == "assistant" and "tool_calls" in out[-1]:
                out[-1]["tool_calls"].append(call)
            elif out and out[-1]["role"] == "assistant":
                out[-1] = {**out[-1], "tool_calls": [call]}
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": _text(item["output"])}
            )
        elif kind in (None, "message") and item.get("role") in ("user", "assistant", "system"):
            out.append({"role": str(item["role"]), "content": _text(item.get("content"))})
        else:
            return None
    return out


def _from_neutral(messages: Iterable[Mapping[str, Any]]) -> Iterable[Item]:
    """OpenAI chat messages as input items."""
    for n, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            yield {
                "type": "function_call_output",
                "call_id": message["tool_call_id"],
                "output": message["content"],
            }
        elif role == "assistant":
            if message.get("content"):
                yield {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{n}",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": message["content"], "annotations": []}
                    ],
                }
            for call in message.get("tool_calls") or ():
                yield {
                    "type": "function_call",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                }
        else:
            yield {"role": role, "content": message["content"]}


def _text(content: Any) -> str:
    """An item's content as text (the text of its text parts)."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return "" if content is None else str(content)
