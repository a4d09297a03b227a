"""Text and JSON from outside (models, servers, files), read so that only ``ValueError`` escapes.

``json.loads`` alone accepts ``NaN``/``Infinity`` (which have no JSON form and cannot be
written back), turns ``1e999`` into infinity, and raises ``RecursionError`` on deep nesting.
``parse_json`` refuses all three with a ``ValueError``. ``valid_text`` replaces lone UTF-16
surrogates (which JSON escapes like ``"\\ud800"`` produce and UTF-8 cannot encode) with
U+FFFD, so such text can be recorded, sent and printed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays/objects accepted from outside (tool arguments nest a few levels)."""

JSONValue = None | bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"]
"""Any JSON value (what ``parse_json`` returns), for data whose shape is chosen outside:
tool arguments a model wrote, raw API payloads, opaque provider items."""

JSONObject = dict[str, JSONValue]
"""A JSON object of any shape."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def parse_json(text: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``text`` parsed as strict JSON with valid strings; ``ValueError`` for anything else."""
    value, end = parse_json_prefix(text, max_depth)
    if text[end:].strip():
        raise ValueError(f"extra data after the JSON value at character {end}")
    return value


def parse_json_prefix(text: str, max_depth: int = MAX_JSON_DEPTH) -> tuple[Any, int]:
    """The strict JSON value at the start of ``text`` (leading blanks allowed) and its end."""
    start = len(text) - len(text.lstrip())
    try:
        value, end = _DECODER.raw_decode(text, start)
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {max_depth} levels") from None
    check_depth(value, max_depth)
    if _SURROGATE_ESCAPE.search(text, start, end) or _SURROGATE.search(text, start, end):
        value = _valid_strings(value)
    return value, end


def _valid_strings(value: Any) -> Any:
    """``value`` with ``valid_text`` applied to every string (its depth is already bounded)."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid_strings(v) for v in value]
    if isinstance(value, dict):
        return {valid_text(k): _valid_strings(v) for k, v in value.items()}
    return value


def check_depth(value: Any, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise ``ValueError`` when lists/dicts in ``value`` nest deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth > max_depth:
            raise ValueError(f"JSON nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children)


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (pairs become their character)."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# C0 controls but tab and newline, DEL and C1 controls: a terminal acts on them (ESC starts
# CSI/OSC sequences that clear the screen or set the title; C1 CSI/OSC do the same alone).
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character a terminal would act on shown as ``\\xNN``."""
    return _TERMINAL_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
