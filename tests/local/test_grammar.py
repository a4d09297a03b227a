"""Mask -> GBNF grammar text (pure Python); decoding under it is tested with the engine."""

from __future__ import annotations

import pytest

from contextengine import ToolMask
from contextengine.local.grammar import mask_grammar

NAMES = ("file_ls", "file_read", "shell_exec")


def _rule(grammar: str, name: str) -> str:
    return next(line for line in grammar.splitlines() if line.startswith(f"{name} ::="))


@pytest.mark.parametrize("mask", [None, ToolMask()])
def test_no_grammar_when_nothing_is_restricted(mask):
    assert mask_grammar(mask, NAMES) is None


def test_required_mode_is_exactly_one_allowed_call():
    grammar = mask_grammar(ToolMask.only("file_", mode="required"), NAMES)
    assert _rule(grammar, "root") == "root ::= call"
    assert _rule(grammar, "name") == 'name ::= "\\"file_ls\\"" | "\\"file_read\\""'
    assert "text ::=" not in grammar


def test_open_allow_list_with_required_mode_allows_every_tool():
    grammar = mask_grammar(ToolMask(None, "required"), NAMES)
    assert "shell_exec" in _rule(grammar, "name")


def test_auto_mode_allows_text_or_a_call():
    grammar = mask_grammar(ToolMask(("file_read",), "auto"), NAMES)
    assert _rule(grammar, "root") == "root ::= text | call"
    assert _rule(grammar, "name") == 'name ::= "\\"file_read\\""'


def test_auto_mode_with_nothing_allowed_is_text_only():
    grammar = mask_grammar(ToolMask(("web_",), "auto"), NAMES)
    assert _rule(grammar, "root") == "root ::= text"
    assert "call ::=" not in grammar


@pytest.mark.parametrize("mode", ["required", "specified"])
def test_a_call_mode_that_allows_no_tool_is_an_error(mode):
    with pytest.raises(ValueError, match=r"allows none of the tools"):
        mask_grammar(ToolMask(("web_",), mode), NAMES)
