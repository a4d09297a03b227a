"""Where a request's cache breakpoints go on the wire (R1.4); no SDK is imported here.

The builder reports three breakpoints (end of L1, of L2, of the persisted history);
``cache_breakpoints`` adds the end of the previous step's history, which is where the
previous request wrote its last cache entry: a cache looked up at marked positions
(Anthropic's, whose lookback from a mark is 20 blocks; OpenAI's explicit breakpoints) reads
it back surely when this request marks it too. Anthropic puts ``cache_control`` there.

OpenAI's explicit breakpoints (``gpt-5.6`` and later, per the API reference of
``prompt_cache_options``): a content block carries ``prompt_cache_breakpoint:
{"mode": "explicit"}``, the request carries ``prompt_cache_options: {"mode": "explicit"}``
so OpenAI writes no implicit breakpoint of its own (it would sit at the end of the task
status tail, which the next request replaces) and writes at most the latest four explicit
ones. Only input blocks take a breakpoint, so one falling on an assistant message moves to
the nearest input message before it. On such models every input message goes as content
blocks, marked or not, so a message is the same blocks whether or not it carries a mark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from contextengine.context.request import Request

MAX_BREAKPOINTS = 4
EXPLICIT_BREAKPOINT: dict[str, str] = {"mode": "explicit"}
PROMPT_CACHE_OPTIONS: dict[str, str] = {"mode": "explicit"}
_EXPLICIT_SINCE = (5, 6)
_GPT_VERSION = re.compile(r"(?:^|[/:])gpt-(\d+)(?:\.(\d+))?")


def cache_breakpoints(request: Request) -> list[int]:
    """The message indices that carry a breakpoint (at most ``MAX_BREAKPOINTS``).

    The request's own breakpoints (end of L1, of L2, of the persisted history) plus the
    end of the previous step's history: the message before the latest persisted assistant
    reply, which is where the previous request's persisted history ended.
    """
    marked = request.breakpoints
    if not marked:
        return []
    messages = request.messages
    start = request.segments.l1 + request.segments.l2
    for i in range(request.segments.persisted - 1, start, -1):
        if messages[i]["role"] == "assistant":
            marked = sorted({*marked, i - 1})
            break
    return marked[-MAX_BREAKPOINTS:]


def has_explicit_breakpoints(model: str) -> bool:
    """Whether an OpenAI ``model`` takes explicit cache breakpoints (``gpt-5.6`` and later)."""
    found = _GPT_VERSION.search(model)
    if found is None:
        return False
    major, minor = int(found.group(1)), int(found.group(2) or 0)
    return (major, minor) >= _EXPLICIT_SINCE


def input_breakpoints(request: Request) -> frozenset[int]:
    """``cache_breakpoints`` on input messages: one on an assistant message moves to the
    nearest earlier message that is not one (and is dropped when there is none)."""
    messages = request.messages
    marks: set[int] = set()
    for i in cache_breakpoints(request):
        while i >= 0 and messages[i]["role"] == "assistant":
            i -= 1
        if i >= 0:
            marks.add(i)
    return frozenset(marks)


def text_blocks(content: Any, block_type: str, marked: bool) -> list[dict[str, Any]]:
    """Message ``content`` as content blocks (a string is one ``block_type`` block), the
    last one carrying an explicit breakpoint when ``marked``."""
    if isinstance(content, Sequence) and not isinstance(content, str):
        blocks = [dict(part) for part in content if isinstance(part, Mapping)]
    else:
        blocks = [{"type": block_type, "text": content if isinstance(content, str) else ""}]
    if not blocks:
        blocks = [{"type": block_type, "text": ""}]
    if marked:
        blocks[-1]["prompt_cache_breakpoint"] = dict(EXPLICIT_BREAKPOINT)
    return blocks


def marked_chat_messages(
    messages: Sequence[Mapping[str, Any]], marks: frozenset[int]
) -> list[dict[str, Any]]:
    """Chat Completions messages with every input message's content as text parts, those
    at ``marks`` ending in an explicit breakpoint; assistant messages are left as they are."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if message["role"] == "assistant":
            out.append(dict(message))
        else:
            out.append(
                {**message, "content": text_blocks(message.get("content"), "text", i in marks)}
            )
    return out
