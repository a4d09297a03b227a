"""Mask -> GBNF grammar text (pure Python); decoding under it is tested with the engine."""

from __future__ import annotations

import pytest

from contextengine import ToolMask
from contextengine.local.grammar import call_array_grammar, mask_grammar

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


def test_call_array_grammar_binds_the_names_and_leaves_parameters_free():
    grammar = call_array_grammar(["file_read", "file_write"])
    assert _rule(grammar, "root") == 'root ::= "[" call ( "," call )* "]"'
    assert _rule(grammar, "name") == 'name ::= "\\"file_read\\"" | "\\"file_write\\""'
    assert "object" in _rule(grammar, "call")
    with pytest.raises(ValueError, match="at least one"):
        call_array_grammar([])


@pytest.mark.local_engine
def test_decoding_under_the_call_array_grammar_names_only_allowed_tools(tiny_model):
    """What a llama.cpp server does with the grammar the OpenAI-compatible adapter sends."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from contextengine.providers.local import LlamaCppProvider

    llama = LlamaCppProvider(tiny_model.gguf_path, n_ctx=1024, seed=7).llama
    grammar = llama_cpp.LlamaGrammar.from_string(
        call_array_grammar(["file_read", "file_write"]), verbose=False
    )
    prompt = llama.tokenize(b"Call a tool.", add_bos=True)
    for seed in range(5):
        llama.set_seed(seed)
        pieces = []
        for count, token in enumerate(llama.generate(prompt, temp=1.0, grammar=grammar)):
            if llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(llama.model), token):
                break
            pieces.append(llama.detokenize([token]))
            if count >= 40:
                break
        text = b"".join(pieces).decode("utf-8", errors="replace")
        assert text.startswith(('[{"name":"file_read"', '[{"name":"file_write"')), text
