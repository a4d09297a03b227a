"""GBNF grammars that enforce a tool mask at decode time (R2.3) for the embedded engine.

The grammar admits exactly the replies the mask allows, in the format of
``chat_format``: ``auto`` is plain text (never containing ``<tool_call>``) or one call to
an allowed tool; ``required`` and ``specified`` are exactly one call to an allowed tool.
Arguments are a JSON object in compact form, the canonical form history renders, so a
call the model generated re-renders to the same text.

``call_array_grammar`` is the same constraint for a llama.cpp server: the reply is a JSON
array of ``{"name", "parameters"}`` calls to the allowed tools (the shape vLLM builds for a
required call), which the OpenAI-compatible adapter turns back into tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contextengine.local.chat_format import TOOL_CALL_CLOSE, TOOL_CALL_OPEN
from contextengine.toolkit.mask import ToolMask

_JSON_RULES = r"""
object ::= "{" ( member ( "," member )* )? "}"
member ::= string ":" value
value ::= object | array | string | number | "true" | "false" | "null"
array ::= "[" ( value ( "," value )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
"""


def mask_grammar(mask: ToolMask | None, tool_names: Sequence[str]) -> str | None:
    """The GBNF grammar for ``mask`` over the request's tools; ``None`` when it restricts nothing.

    Raises ``ValueError`` when the mode requires a call but the mask allows none of the tools.
    """
    if mask is None or mask.is_open:
        return None
    allowed = mask.allowed_names(tool_names)
    if mask.mode != "auto" and not allowed:
        raise ValueError(
            f"tool mask {mask.allow} (mode {mask.mode!r}) allows none of the tools "
            f"{list(tool_names)}, but the mode requires a call"
        )
    if mask.mode != "auto":
        root = "root ::= call"
    elif allowed:
        root = "root ::= text | call"
    else:
        root = "root ::= text"
    rules = [root]
    if mask.mode == "auto":
        rules += _text_rules(TOOL_CALL_OPEN)
    if allowed:
        rules += _call_rules(allowed)
    return "\n".join(rules) + "\n"


def call_array_grammar(names: Sequence[str]) -> str:
    """GBNF for a non-empty JSON array of ``{"name": ..., "parameters": {...}}`` calls whose
    names are ``names``; the parameters are any JSON object (the guard validates them)."""
    if not names:
        raise ValueError("a call array needs at least one allowed tool")
    alternatives = " | ".join(_literal(json.dumps(n, ensure_ascii=False)) for n in names)
    call = " ".join(
        (_literal('{"name":'), "name", _literal(',"parameters":'), "object", _literal("}"))
    )
    return (
        "\n".join(
            [
                'root ::= "[" call ( "," call )* "]"',
                f"call ::= {call}",
                f"name ::= {alternatives}",
                *_JSON_RULES.strip().splitlines(),
            ]
        )
        + "\n"
    )


def _call_rules(names: Sequence[str]) -> list[str]:
    head = _literal(f'{TOOL_CALL_OPEN}\n{{"name": ')
    middle = _literal(', "arguments": ')
    tail = _literal(f"}}\n{TOOL_CALL_CLOSE}")
    alternatives = " | ".join(_literal(json.dumps(n, ensure_ascii=False)) for n in names)
    return [
        f"call ::= {head} name {middle} object {tail}",
        f"name ::= {alternatives}",
        *_JSON_RULES.strip().splitlines(),
    ]


def _text_rules(marker: str) -> list[str]:
    """Non-empty text that never contains ``marker``: a matcher whose state ``i`` means
    "the text ends with ``marker[:i]``"; the step that would complete the marker is left out.

    The fallback on a mismatch is state 1 on the marker's first character and state 0
    otherwise, which is exact because that character occurs nowhere else in the marker.
    """
    first = marker[0]
    if first in marker[1:]:
        raise ValueError(f"marker {marker!r} repeats its first character")
    rules = []
    for i, char in enumerate(marker):
        steps = []
        if i + 1 < len(marker):
            steps.append(f"{_literal(char)} t{i + 1}")
        if i > 0:
            steps.append(f"{_literal(first)} t1")
        excluded = {char, first}
        steps.append(f"[^{''.join(_class_char(c) for c in sorted(excluded))}] t0")
        rules.append(f"step{i} ::= " + " | ".join(steps))
        rules.append(f't{i} ::= "" | step{i}')
    rules.append("text ::= step0")
    return rules


def _literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped.replace("\r", "\\r").replace("\t", "\\t") + '"'


def _class_char(char: str) -> str:
    return "\\" + char if char in "]\\^-" else char
