"""The tool-call text protocol of the embedded engine, ChatML prompts, and the reply parser.

Local models see tools and tool traffic as text (``text_messages``): the tool list joins the
system message, a call is written as ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``
(the format Hermes and Qwen models are trained on), a result is a user turn inside
``<tool_response>`` tags. History renders calls exactly that way, so a model's own call,
re-rendered, matches the text it generated. The turn format around that text is the model's
(``contextengine.local.templates``); ChatML, defined here, is the default.

The ChatML prompt is a pure function of the request's tools and messages, rendered turn by
turn: turn ``k`` depends on message ``k`` only (the tool list is folded into the first system
turn), so an append-only request renders to an append-only prompt and the engine's KV
prefix survives from one call to the next.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.context.request import Request
from contextengine.types import ToolCall

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
END_OF_TEXT = "<|endoftext|>"
TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
GENERATION_PROMPT = f"{IM_START}assistant\n"

_TOOLS_INTRO = (
    "\n\n# Tools\n\n"
    "You can call the functions below. Each signature is a JSON object inside <tools></tools>:\n"
    "<tools>\n"
)
_TOOLS_OUTRO = (
    "\n</tools>\n\n"
    "To call a function, reply with one JSON object inside <tool_call></tool_call> tags:\n"
    f'{TOOL_CALL_OPEN}\n{{"name": <function-name>, "arguments": <args-json-object>}}\n'
    f"{TOOL_CALL_CLOSE}"
)


def render_prompt(request: Request) -> str:
    """The request as one ChatML prompt, ending with the assistant's generation prompt."""
    return "".join(render_turns(request.tools, request.messages)) + GENERATION_PROMPT


def render_turns(
    tools: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> list[str]:
    """One ChatML turn per message of ``text_messages``."""
    return [_wrap(m["role"], m["content"]) for m in text_messages(tools, messages)]


def text_messages(
    tools: Sequence[Mapping[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """The messages as plain ``{role, content}`` text, one per message: the tool list joins
    the first message when it is a system message, and is a system message of its own before
    the others otherwise; calls are ``<tool_call>`` text, results ``<tool_response>`` user
    messages. Message ``k`` depends on message ``k`` (and the tools) only."""
    plain = [_text_message(m) for m in messages]
    if not tools:
        return plain
    section = _TOOLS_INTRO + "\n".join(canonical_json(t) for t in tools) + _TOOLS_OUTRO
    if plain and plain[0]["role"] == "system":
        plain[0] = {"role": "system", "content": plain[0]["content"] + section}
    else:
        plain.insert(0, {"role": "system", "content": section.lstrip("\n")})
    return plain


def render_call(name: str, arguments_json: str) -> str:
    """One tool call as the model writes it (also the grammar's shape)."""
    name_json = json.dumps(name, ensure_ascii=False)
    body = f'{{"name": {name_json}, "arguments": {arguments_json or "{}"}}}'
    return f"{TOOL_CALL_OPEN}\n{body}\n{TOOL_CALL_CLOSE}"


def _text_message(message: Mapping[str, Any]) -> dict[str, str]:
    role = str(message.get("role", "user"))
    content = _text(message.get("content"))
    if role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
    if role == "assistant":
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            rendered = render_call(
                str(function.get("name", "")), str(function.get("arguments", ""))
            )
            content = f"{content}\n{rendered}" if content else rendered
    return {"role": role, "content": content}


def _wrap(role: str, body: str) -> str:
    return f"{IM_START}{role}\n{body}{IM_END}\n"


def _text(content: Any) -> str:
    """Message content as text; OpenAI content parts contribute their ``text``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))


def visible_text(partial: str) -> str:
    """The part of a reply being generated that is surely outside any tool call: the text
    before the first ``<tool_call>``, less an end that could still grow into one."""
    at = partial.find(TOOL_CALL_OPEN)
    if at >= 0:
        return partial[:at]
    for k in range(min(len(TOOL_CALL_OPEN) - 1, len(partial)), 0, -1):
        if partial.endswith(TOOL_CALL_OPEN[:k]):
            return partial[:-k]
    return partial


@dataclass(frozen=True)
class ParsedReply:
    """A model's reply split into visible text and tool calls."""

    content: str
    tool_calls: tuple[ToolCall, ...]


_BLOCK = re.compile(
    re.escape(TOOL_CALL_OPEN) + r"(.*?)(?:" + re.escape(TOOL_CALL_CLOSE) + r"|\Z)", re.S
)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]+)"')
_RAW_ARGS = re.compile(r'"(?:arguments|parameters)"\s*:\s*(.*)\Z', re.S)
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.S)


def parse_reply(text: str, id_prefix: str = "call") -> ParsedReply:
    """Find ``<tool_call>`` blocks anywhere in ``text`` (a missing close tag ends at the end).

    Tolerant: a fenced or trailing-garbage JSON body, ``parameters`` for ``arguments``, and
    arguments given as a JSON string all parse. A block whose name cannot be found stays in
    the content, so the caller sees an unparseable reply instead of a silently lost call.
    Call ids are ``{id_prefix}_{k}``.
    """
    calls: list[ToolCall] = []
    kept: list[str] = []
    last = 0
    for match in _BLOCK.finditer(text):
        call = _parse_call(match.group(1), f"{id_prefix}_{len(calls)}")
        if call is None:
            continue
        kept.append(text[last : match.start()])
        last = match.end()
        calls.append(call)
    kept.append(text[last:])
    return ParsedReply(content="".join(kept).strip(), tool_calls=tuple(calls))


def _parse_call(body: str, call_id: str) -> ToolCall | None:
    body = body.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    obj = _first_json_object(body)
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                return ToolCall(call_id, obj["name"], args)
        return ToolCall(call_id, obj["name"], canonical_json(args))
    name = _NAME.search(body)
    if name is None:
        return None
    raw = _RAW_ARGS.search(body)
    return ToolCall(call_id, name.group(1), raw.group(1).strip() if raw else "")


def _first_json_object(text: str) -> Any:
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError:
        return None
