"""ChatML rendering and the tolerant tool-call parser (pure Python, no engine needed)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine import (
    AssistantEntry,
    ContextBuilder,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.canonical import canonical_json
from contextengine.local.chat_format import (
    GENERATION_PROMPT,
    parse_reply,
    render_call,
    render_prompt,
    render_turns,
    visible_text,
)

TOOLS = [
    {
        "name": "file_read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "file_ls",
        "description": "List a folder",
        "parameters": {"type": "object", "properties": {}},
    },
]


def _session_requests(tmp_path):
    session = Session.create(tmp_path / "s")
    builder = ContextBuilder(system_prompt="You are terse.", tools=TOOLS, project_root=tmp_path)
    session.append(UserEntry(text="List the folder."))
    first = builder.build(session)
    call = ToolCallRecord(id="c1", name="file_ls", arguments_json='{"path":"."}')
    session.append(AssistantEntry(text="Listing.", tool_calls=(call,)))
    session.append(
        ToolResultEntry(call_id="c1", tool_name="file_ls", status="success", content="README.md")
    )
    return first, builder.build(session)


def test_prompt_has_tools_in_system_turn_and_ends_with_generation_prompt(tmp_path):
    first, _ = _session_requests(tmp_path)
    prompt = render_prompt(first)
    system = prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\nYou are terse.\n\n# Tools")
    for tool in first.tools:
        assert "\n" + canonical_json(tool) + "\n" in system
    assert prompt.endswith("<|im_start|>user\nList the folder.<|im_end|>\n" + GENERATION_PROMPT)


def test_append_only_request_renders_to_a_prompt_extension(tmp_path):
    first, second = _session_requests(tmp_path)
    turns = "".join(render_turns(first.tools, first.messages))
    later = render_prompt(second)
    assert later.startswith(turns + GENERATION_PROMPT)
    call = render_call("file_ls", '{"path":"."}')
    assert f"{GENERATION_PROMPT}Listing.\n{call}<|im_end|>\n" in later
    assert "<|im_start|>user\n<tool_response>\n" in later


def test_tools_without_a_system_message_get_their_own_turn():
    turns = render_turns(
        [{"type": "function", "function": {"name": "f"}}], [{"role": "user", "content": "hi"}]
    )
    assert len(turns) == 2
    assert turns[0].startswith("<|im_start|>system\n# Tools\n")
    assert turns[1] == "<|im_start|>user\nhi<|im_end|>\n"


def test_assistant_call_without_text_starts_with_the_call():
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
    }
    assert render_turns([], [message]) == [
        f"<|im_start|>assistant\n{render_call('f', '{}')}<|im_end|>\n"
    ]


@given(
    st.text(alphabet=st.characters(codec="utf-8", exclude_characters="<"), max_size=20),
    st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
def test_rendered_calls_parse_back(text, name, arguments):
    args = canonical_json(arguments)
    reply = parse_reply(f"{text}\n{render_call(name, args)}")
    assert reply.content == text.strip()
    assert [(c.name, c.arguments_json) for c in reply.tool_calls] == [(name, args)]


def test_parser_is_tolerant():
    assert parse_reply("just text").tool_calls == ()
    fenced = parse_reply(
        '<tool_call>\n```json\n{"name": "a", "parameters": {"x": 1}}\n```\n</tool_call>'
    )
    assert [(c.name, c.arguments_json) for c in fenced.tool_calls] == [("a", '{"x":1}')]
    unclosed = parse_reply('<tool_call>{"name": "a", "arguments": "{\\"y\\": 2}"}')
    assert unclosed.tool_calls[0].arguments_json == '{"y":2}'
    trailing = parse_reply('<tool_call>{"name": "a", "arguments": {}}} junk</tool_call>')
    assert trailing.tool_calls[0].arguments_json == "{}"


def test_broken_arguments_are_kept_raw_and_ids_are_numbered():
    reply = parse_reply(
        '<tool_call>{"name": "a", "arguments": {"p": </tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>',
        id_prefix="x",
    )
    assert [(c.id, c.name, c.arguments_json) for c in reply.tool_calls] == [
        ("x_0", "a", '{"p":'),
        ("x_1", "b", "{}"),
    ]
    with pytest.raises(json.JSONDecodeError):
        reply.tool_calls[0].arguments()


def test_a_block_without_a_name_stays_in_the_content():
    reply = parse_reply("before <tool_call>{oops}</tool_call> after")
    assert reply.tool_calls == ()
    assert reply.content == "before <tool_call>{oops}</tool_call> after"


@pytest.mark.parametrize(
    ("partial", "visible"),
    [
        ("hello", "hello"),
        ("hello <tool", "hello "),
        ("a<tool_call>\n{", "a"),
        ("x<", "x"),
        ("a<b", "a<b"),
        ("<t<", "<t"),
    ],
)
def test_visible_text_holds_back_what_may_become_a_call(partial, visible):
    assert visible_text(partial) == visible
