"""Turn formats chosen from the model's chat template: Gemma and ChatML prefix stability,
the Jinja2 path over the tiny model's own template (pure Python; engine tests at the end)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine import ContextBuilder, Session, UserEntry
from contextengine.context.request import Request
from contextengine.errors import ConfigError, ProviderError
from contextengine.local.chat_format import render_call
from contextengine.local.templates import (
    CHATML,
    GEMMA,
    JinjaFormat,
    TurnFormat,
    format_for_template,
    gemma_turns,
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "file_read",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
# Gemma 3's chat template (google/gemma-3-*-it tokenizer_config.json), its text-only part;
# the 270M base model's GGUF carries no template.
GEMMA3_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- endif -%}
    {{ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model\n'}}
{%- endif -%}
"""
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@st.composite
def conversations(draw):
    """system, task, then steps: an assistant turn with 0-2 calls, their results, and now
    and then a user message."""
    messages = [
        {"role": "system", "content": draw(TEXT)},
        {"role": "user", "content": draw(TEXT)},
    ]
    for step in range(draw(st.integers(0, 5))):
        calls = [
            {
                "id": f"c{step}_{k}",
                "type": "function",
                "function": {"name": "file_read", "arguments": '{"path":"a.py"}'},
            }
            for k in range(draw(st.integers(0, 2)))
        ]
        messages.append({"role": "assistant", "content": draw(TEXT), "tool_calls": calls})
        messages += [
            {"role": "tool", "tool_call_id": c["id"], "content": draw(TEXT)} for c in calls
        ]
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(TEXT)})
    return messages


def _request(tools, messages) -> Request:
    """What a format reads of a request: its tools and messages."""
    return SimpleNamespace(tools=list(tools), messages=list(messages))  # type: ignore[return-value]


@pytest.mark.parametrize("fmt", [CHATML, GEMMA], ids=lambda f: f.name)
@given(messages=conversations(), tools=st.sampled_from([[], TOOLS]))
def test_appending_messages_never_changes_the_rendered_prefix(fmt: TurnFormat, messages, tools):
    full = fmt.render_prompt(_request(tools, messages))
    for k in range(2, len(messages)):
        earlier = "".join(fmt.render_turns(tools, messages[:k]))
        assert full.startswith(earlier)
        # the generation prompt of an earlier request is the start of the next model turn
        if messages[k]["role"] == "assistant":
            assert full.startswith(fmt.render_prompt(_request(tools, messages[:k])))


def test_gemma_folds_the_system_text_into_the_first_user_turn():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": " Read a.py \n"},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [{"function": {"name": "file_read", "arguments": '{"path":"a.py"}'}}],
        },
        {"role": "tool", "content": "print(1)"},
    ]
    turns = gemma_turns(TOOLS, messages)
    assert len(turns) == 3
    assert turns[0].startswith("<start_of_turn>user\nBe brief.\n\n# Tools\n")
    assert turns[0].endswith("</tool_call>\n\nRead a.py<end_of_turn>\n")
    call = render_call("file_read", '{"path":"a.py"}')
    assert turns[1] == f"<start_of_turn>model\nReading.\n{call}<end_of_turn>\n"
    assert turns[2] == (
        "<start_of_turn>user\n<tool_response>\nprint(1)\n</tool_response><end_of_turn>\n"
    )
    prompt = GEMMA.render_prompt(_request(TOOLS, messages))
    assert prompt == "".join(turns) + "<start_of_turn>model\n"


def test_gemma_renders_what_gemmas_own_template_renders():
    pytest.importorskip("jinja2")
    call = {"function": {"name": "file_read", "arguments": '{"path":"README.md"}'}}
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is in README.md?"},
        {"role": "assistant", "content": "Reading it.", "tool_calls": [call]},
        {"role": "tool", "content": "# Demo\nHello."},
        {"role": "assistant", "content": " A demo.\n"},
    ]
    template = format_for_template(GEMMA3_TEMPLATE, "jinja")
    for k in range(2, len(messages) + 1):
        for tools in ([], TOOLS):
            request = _request(tools, messages[:k])
            assert template.render_prompt(request) == GEMMA.render_prompt(request)
    # where roles do not alternate, the template refuses and the named format does not
    two_users = _request(
        [], [*messages, {"role": "tool", "content": "x"}, {"role": "user", "content": "y"}]
    )
    with pytest.raises(ProviderError, match="roles must alternate"):
        template.render_prompt(two_users)
    assert GEMMA.render_prompt(two_users).count("<start_of_turn>user\n") == 4


def test_gemma_without_a_system_message_starts_with_the_user():
    assert gemma_turns([], [{"role": "user", "content": "hi"}]) == [
        "<start_of_turn>user\nhi<end_of_turn>\n"
    ]


@pytest.mark.parametrize(
    ("template", "name", "expected"),
    [
        ("{{ bos_token }}<start_of_turn>user\n...", "auto", GEMMA),
        ("<|im_start|>{{ message.role }}", "auto", CHATML),
        (None, "auto", CHATML),
        ("<start_of_turn>", "chatml", CHATML),
        (None, "gemma", GEMMA),
    ],
)
def test_the_format_follows_the_model_template(template, name, expected):
    assert format_for_template(template, name) is expected


def test_a_model_without_a_template_gets_its_architectures_format():
    assert format_for_template(None, "auto", architecture="gemma3") is GEMMA
    assert format_for_template(None, "auto", architecture="llama") is CHATML


def test_other_templates_and_bad_names():
    assert isinstance(format_for_template("[INST]{{ messages }}", "auto"), JinjaFormat)
    with pytest.raises(ConfigError, match="unknown chat format 'llama9'"):
        format_for_template(None, "llama9")
    with pytest.raises(ProviderError, match="needs a chat template"):
        format_for_template(None, "jinja")
    with pytest.raises(ProviderError, match="does not parse"):
        format_for_template("{% if %}", "jinja")
    refusing = format_for_template("{{ raise_exception('roles must alternate') }}", "jinja")
    with pytest.raises(ProviderError, match="template failed: roles must alternate"):
        refusing.render_prompt(_request([], [{"role": "user", "content": "hi"}]))


def _session_request(tmp_path) -> Request:
    session = Session.create(tmp_path / "s")
    builder = ContextBuilder(system_prompt="You are terse.", tools=TOOLS, project_root=tmp_path)
    session.append(UserEntry(text="List the folder."))
    return builder.build(session)


def test_the_tiny_models_own_template_renders_the_chatml_prompt(tmp_path):
    pytest.importorskip("jinja2")
    from contextengine.local.tiny_model import CHAT_TEMPLATE

    request = _session_request(tmp_path)
    jinja = format_for_template(CHAT_TEMPLATE, "jinja")
    assert jinja.render_prompt(request) == CHATML.render_prompt(request)


def _engine_session(tmp_path):
    session = Session.create(tmp_path / "s")
    builder = ContextBuilder(system_prompt="You are terse.", tools=TOOLS, project_root=tmp_path)
    return session, builder


@pytest.mark.local_engine
def test_the_engine_reads_the_template_from_the_model_file(tiny_model, tmp_path):
    pytest.importorskip("llama_cpp")
    from contextengine.local.tiny_model import CHAT_TEMPLATE
    from contextengine.providers.local import LlamaCppProvider

    provider = LlamaCppProvider(tiny_model.gguf_path, n_ctx=1024)
    assert provider.chat_template == CHAT_TEMPLATE
    assert provider.chat_format is CHATML
    request = _session_request(tmp_path)
    assert provider.render_prompt(request) == CHATML.render_prompt(request)


@pytest.mark.local_engine
def test_the_jinja_path_runs_and_keeps_the_kv_prefix(tiny_model, tmp_path):
    pytest.importorskip("llama_cpp")
    from contextengine import AssistantEntry, ToolCallRecord, ToolResultEntry
    from contextengine.providers.local import LlamaCppProvider

    provider = LlamaCppProvider(tiny_model.gguf_path, n_ctx=2048, max_tokens=4, chat_format="jinja")
    assert isinstance(provider.chat_format, JinjaFormat)
    session, builder = _engine_session(tmp_path)
    session.append(UserEntry(text="Read a.py."))
    first = builder.build(session)
    assert provider.complete(first).usage.cached_tokens == 0
    call = ToolCallRecord(id="c1", name="file_read", arguments_json='{"path":"a.py"}')
    session.append(AssistantEntry(text="Reading.", tool_calls=(call,)))
    session.append(
        ToolResultEntry(call_id="c1", tool_name="file_read", status="success", content="x = 1")
    )
    second = builder.build(session)
    usage = provider.complete(second).usage
    assert usage.input_tokens == len(provider.tokenize(provider.render_prompt(second)))
    # everything up to the first prompt's generation prompt is kept
    shared = provider.tokenize(provider.render_prompt(first))
    assert len(shared) <= usage.cached_tokens < usage.input_tokens


@pytest.mark.local_engine
def test_the_context_size_comes_from_the_config_capped_at_the_models_length(tiny_model):
    pytest.importorskip("llama_cpp")
    from contextengine import Config, make_provider
    from contextengine.providers.local import local_n_ctx

    trained = 4096  # TinyModelConfig.context_length
    assert local_n_ctx(tiny_model.gguf_path, Config().context_window) == trained
    assert local_n_ctx(tiny_model.gguf_path, 1000) == 1000
    window = Config(context_window=1536).context_window
    provider = make_provider("local", str(tiny_model.gguf_path), context_window=window)
    assert provider.llama.n_ctx() == 1536
    assert make_provider("local", str(tiny_model.gguf_path)).llama.n_ctx() == trained
