"""The cache profiler on synthetic captures: one break cause at a time, in each wire format."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextengine.measure.capture import CapturedRequest, captured_request, load_capture
from contextengine.measure.profile import profile_requests
from contextengine.measure.segments import CaptureFormatError

SYSTEM = "You are a careful coding agent. Follow the repository's conventions. " * 8


def tool(name: str, **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties or {"path": {"type": "string"}}}
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": schema},
    }


TOOLS = [tool("read_file"), tool("write_file"), tool("run_tests")]


def call(arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    function = {"name": "read_file", "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def chat(
    messages: list[dict[str, Any]], system: str = SYSTEM, tools: list | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "tools": TOOLS if tools is None else tools,
        "messages": [{"role": "system", "content": system}, *messages],
        **extra,
    }


TASK = {"role": "user", "content": "Fix the failing test in tests/test_app.py."}
STEP = [
    call('{"path":"tests/test_app.py"}'),
    {"role": "tool", "tool_call_id": "call_1", "content": "def test_app():\n    assert 1\n" * 20},
]
MORE = [
    {"role": "assistant", "content": "Running the tests now."},
    {"role": "user", "content": "Go on."},
]


def only_break(*bodies: dict[str, Any]) -> dict[str, Any]:
    """The one break of a two-or-more request capture (the last request's)."""
    profile = profile_requests(CapturedRequest(b) for b in bodies)
    breaks = [r.cache_break.as_dict() for r in profile.requests if r.cache_break]
    assert len(breaks) == 1, breaks
    assert profile.requests[-1].cache_break is not None
    return breaks[0]


def test_append_only_growth_is_no_break() -> None:
    bodies = [chat([TASK]), chat([TASK, *STEP]), chat([TASK, *STEP, *MORE])]
    profile = profile_requests(CapturedRequest(b) for b in bodies)
    assert [r.cache_break for r in profile.requests] == [None, None, None]
    first, second, _ = profile.requests
    assert first.reusable_tokens == 0
    assert second.reusable_tokens >= first.total_tokens - 2  # the whole first request, bar its end
    assert profile.summary()["breaks"] == 0


def test_timestamp_in_system_prompt() -> None:
    brk = only_break(
        chat([TASK], SYSTEM + "Now: 2026-11-22T10:00:01Z."),
        chat([TASK, *STEP], SYSTEM + "Now: 2026-11-22T10:04:59Z."),
    )
    assert brk["cause"] == "timestamp"
    assert brk["message_index"] == 0
    assert "a timestamp in the system prompt" in brk["description"]
    assert "10:00:01" in brk["snippet"] and "10:04:59" in brk["snippet"]
    assert brk["fix"] and brk["lost_tokens"] > 0 and brk["cost_usd"] > 0


def test_tools_reordered() -> None:
    brk = only_break(chat([TASK]), chat([TASK, *STEP], tools=TOOLS[::-1]))
    assert brk["cause"] == "tools_reordered"
    assert brk["message_index"] is None
    assert "run_tests, write_file, read_file" in brk["description"]


def test_tool_edited() -> None:
    edited = [
        TOOLS[0],
        tool("write_file", path={"type": "string"}, mode={"type": "string"}),
        TOOLS[2],
    ]
    brk = only_break(chat([TASK]), chat([TASK, *STEP], tools=edited))
    assert brk["cause"] == "tool_edited"
    assert "'write_file'" in brk["description"]


def test_tool_removed() -> None:
    brk = only_break(chat([TASK]), chat([TASK, *STEP], tools=TOOLS[:2]))
    assert brk["cause"] == "tools_changed"
    assert "removed run_tests" in brk["description"]


def test_history_rewritten_at_message_n() -> None:
    long = [TASK, *STEP, *MORE]
    summary = {"role": "user", "content": "Summary: the test reads tests/test_app.py."}
    brk = only_break(chat(long), chat([TASK, summary, MORE[1]]))
    assert brk["cause"] == "history_rewritten"
    assert brk["message_index"] == 2  # messages[0] is the system prompt, [1] the task
    assert "message 2" in brk["description"]
    assert "removed or replaced" in brk["description"]


def test_history_edited_in_place() -> None:
    edited = [TASK, STEP[0], {**STEP[1], "content": "[output trimmed]"}, *MORE]
    brk = only_break(chat([TASK, *STEP, MORE[0]]), chat(edited))
    assert brk["cause"] == "history_rewritten"
    assert brk["message_index"] == 3
    assert "changed" in brk["description"]


def test_key_order_in_tool_arguments() -> None:
    before = [TASK, call('{"path":"a.py","limit":5}'), STEP[1]]
    after = [TASK, call('{"limit":5,"path":"a.py"}'), STEP[1], *MORE]
    brk = only_break(chat(before), chat(after))
    assert brk["cause"] == "key_order"
    assert brk["message_index"] == 2
    assert "tool arguments" in brk["description"]


def test_key_order_in_tool_schema() -> None:
    reordered = copy.deepcopy(TOOLS)
    function = reordered[1]["function"]
    reordered[1]["function"] = {k: function[k] for k in ("parameters", "name", "description")}
    brk = only_break(chat([TASK]), chat([TASK, *STEP], tools=reordered))
    assert brk["cause"] == "key_order"
    assert "schema of tool 'write_file'" in brk["description"]


def test_request_id_early_in_the_prompt() -> None:
    brk = only_break(
        chat([TASK], SYSTEM + "Request: req_8f3a2b9c7d."),
        chat([TASK, *STEP], SYSTEM + "Request: req_1d4e5f6a0b."),
    )
    assert brk["cause"] == "request_id"
    assert brk["message_index"] == 0


def test_uuid_in_the_first_message() -> None:
    def task(uuid: str) -> dict[str, Any]:
        return {"role": "user", "content": f"Trace {uuid}: fix the failing test."}

    brk = only_break(
        chat([task("3f2b8c1e-9a4d-4e6f-8b2a-1c3d5e7f9a0b")]),
        chat([task("7a1c2e3f-4b5d-4f6a-9c8b-0d1e2f3a4b5c"), *STEP]),
    )
    assert brk["cause"] == "request_id"
    assert brk["message_index"] == 1


def test_system_prompt_changed() -> None:
    brk = only_break(chat([TASK]), chat([TASK, *STEP], SYSTEM + "Be brief."))
    assert brk["cause"] == "system_prompt_changed"


def test_anthropic_cache_control_moving_is_no_break_but_a_timestamp_is() -> None:
    def body(system: str, *blocks: str) -> dict[str, Any]:
        content = [{"type": "text", "text": b} for b in blocks]
        content[-1]["cache_control"] = {"type": "ephemeral"}
        return {
            "model": "claude-sonnet-4-6",
            "max_tokens": 100,
            "system": [{"type": "text", "text": system}],
            "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": content}],
        }

    a = body(SYSTEM, "task")
    b = {
        **a,
        "messages": [
            *a["messages"],
            {"role": "assistant", "content": "ok"},
            body(SYSTEM, "next")["messages"][0],
        ],
    }
    b["messages"][0] = {"role": "user", "content": [{"type": "text", "text": "task"}]}
    c = copy.deepcopy(b)
    c["system"] = [{"type": "text", "text": SYSTEM + " Date: 2026-11-23"}]
    b["system"] = [{"type": "text", "text": SYSTEM + " Date: 2026-11-22"}]
    a["system"] = b["system"]
    profile = profile_requests(CapturedRequest(x) for x in (a, b, c))
    assert profile.requests[1].cache_break is None
    brk = profile.requests[2].cache_break
    assert brk is not None and brk.cause.cause == "timestamp"
    assert brk.cause.message_index is None  # Anthropic's system is not a message
    assert profile.requests[0].wire == "anthropic"


def test_responses_bodies() -> None:
    first = {
        "model": "gpt-5",
        "instructions": SYSTEM + "Today is 2026-11-22.",
        "input": [{"role": "user", "content": "Fix the test."}],
        "tools": [{"type": "function", "name": "read_file", "parameters": {}}],
    }
    second = {
        **first,
        "input": [
            *first["input"],
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
        ],
    }
    third = {**second, "instructions": SYSTEM + "Today is 2026-11-23."}
    profile = profile_requests(CapturedRequest(x) for x in (first, second, third))
    assert profile.requests[0].wire == "openai-responses"
    assert profile.requests[1].cache_break is None
    assert profile.requests[1].reusable_tokens > 0
    brk = profile.requests[2].cache_break
    assert brk is not None and brk.cause.cause == "timestamp"


def test_interleaved_agents_are_told_apart() -> None:
    other_task = {"role": "user", "content": "Write the changelog for release 2.0."}
    other_system = "You write changelogs. Be precise. " * 8
    a1, b1 = chat([TASK]), chat([other_task], other_system)
    a2, b2 = chat([TASK, *STEP]), chat([other_task, *MORE], other_system)
    profile = profile_requests(CapturedRequest(x) for x in (a1, b1, a2, b2))
    assert [r.conversation for r in profile.requests] == [1, 2, 1, 2]
    assert all(r.cache_break is None for r in profile.requests)
    assert profile.summary()["conversations"] == 2


def test_same_agent_new_task_is_a_new_conversation_not_a_break() -> None:
    other = {"role": "user", "content": "Now a different task: update the docs."}
    profile = profile_requests(CapturedRequest(x) for x in (chat([TASK, *STEP]), chat([other])))
    assert [r.conversation for r in profile.requests] == [1, 2]
    assert profile.summary()["breaks"] == 0


def test_prompt_cache_key_groups_conversations() -> None:
    a1 = chat([TASK], prompt_cache_key="agent-a")
    b1 = chat([TASK], prompt_cache_key="agent-b")
    a2 = chat([TASK, *STEP], SYSTEM + "changed", prompt_cache_key="agent-a")
    profile = profile_requests(CapturedRequest(x) for x in (a1, b1, a2))
    assert [r.conversation for r in profile.requests] == [1, 2, 1]
    assert profile.requests[2].cache_break is not None


def test_bare_and_wrapped_lines(tmp_path: Path) -> None:
    capture = tmp_path / "capture.jsonl"
    lines = [
        chat([TASK]),
        {
            "request": chat([TASK, *STEP]),
            "usage": {"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 300}},
        },
        {
            "request": chat([TASK, *STEP, *MORE]),
            "response": {
                "usage": {
                    "input_tokens": 100,
                    "cache_read_input_tokens": 800,
                    "cache_creation_input_tokens": 50,
                    "output_tokens": 7,
                }
            },
        },
    ]
    capture.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    captured = load_capture(capture)
    assert captured[0].usage is None
    assert captured[1].usage is not None and captured[1].usage.cached_tokens == 300
    assert captured[2].usage is not None and captured[2].usage.input_tokens == 950
    summary = profile_requests(captured).summary()
    assert summary["measured_requests"] == 2
    assert summary["measured_hit_rate"] == pytest.approx(1100 / 1850, abs=1e-4)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "capture.jsonl:1"),
        ("[1]", "JSON object"),
        ('{"model": "m"}', "no 'messages'"),
        ('{"request": 5}', "'request' must be"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, line: str, fragment: str) -> None:
    capture = tmp_path / "capture.jsonl"
    capture.write_text(line + "\n")
    with pytest.raises(CaptureFormatError, match=fragment):
        profile_requests(load_capture(capture))


def test_wrapped_request_reads_like_a_bare_one() -> None:
    body = chat([TASK])
    assert captured_request({"request": body}).body == captured_request(body).body


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=8))
def test_append_only_never_breaks_and_reuses_the_previous_request(texts: list[str]) -> None:
    messages: list[dict[str, Any]] = [TASK]
    bodies = []
    for i, text in enumerate(texts):
        messages = [*messages, {"role": "assistant" if i % 2 else "user", "content": text}]
        bodies.append(chat(messages))
    profile = profile_requests(CapturedRequest(b) for b in bodies)
    assert all(r.cache_break is None for r in profile.requests)
    assert all(r.reusable_tokens <= r.total_tokens for r in profile.requests)
    assert {r.conversation for r in profile.requests} == {1}


def test_a_replaced_last_message_is_a_volatile_tail_not_a_break() -> None:
    def status(step: int) -> dict[str, Any]:
        return {"role": "user", "content": f"## Task status\nstep {step} of 5"}

    bodies = [
        chat([TASK, status(1)]),
        chat([TASK, *STEP, status(2)]),
        chat([TASK, *STEP, *MORE, status(3)]),
    ]
    profile = profile_requests(CapturedRequest(b) for b in bodies)
    assert [r.cache_break for r in profile.requests] == [None, None, None]
    assert [r.tail_replaced for r in profile.requests] == [False, True, True]
    assert profile.summary()["tail_replacements"] == 2


def test_a_side_call_is_a_branch_the_next_request_does_not_break_on() -> None:
    main = [chat([TASK, *STEP]), chat([TASK, *STEP, *MORE])]
    side = chat([TASK, *STEP, {"role": "user", "content": "Summarize."}], tools=[])
    profile = profile_requests(CapturedRequest(b) for b in (main[0], side, main[1]))
    assert profile.requests[1].cache_break is not None  # the side call dropped the tools
    assert profile.requests[1].cache_break.cause.cause == "tools_changed"
    assert profile.requests[2].cache_break is None  # continues the request before the side call
    assert profile.requests[2].conversation == 1


def test_a_break_of_a_model_without_a_known_price_has_no_cost() -> None:
    bodies = [
        {**chat([TASK], SYSTEM + "Now: 2026-11-22T10:00:01Z."), "model": "my-finetune"},
        {**chat([TASK, *STEP], SYSTEM + "Now: 2026-11-22T10:04:59Z."), "model": "my-finetune"},
    ]
    profile = profile_requests(CapturedRequest(b) for b in bodies)
    brk = profile.requests[-1].cache_break
    assert brk is not None and brk.lost_tokens > 0 and brk.cost_usd is None
    summary = profile.summary()
    assert summary["unpriced_models"] == ["my-finetune"] and summary["break_cost_usd"] == 0
