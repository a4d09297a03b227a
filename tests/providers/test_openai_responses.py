"""OpenAIResponsesProvider against a real local server speaking the Responses stream format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine import AssistantEntry, Config, ToolCallRecord, ToolMask, Usage
from contextengine.agent.loop import Agent
from contextengine.providers.base import StreamingProvider
from contextengine.providers.openai_responses import OpenAIResponsesProvider, responses_input
from contextengine.types import ReasoningDelta, ReplyDone

from .conftest import HISTORY, SESSION_ID, BuildRequest, StartServer
from .fake_servers import FakeUsage


def provider(base_url: str, **kwargs: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider("gpt-test", api_key="sk-test", base_url=base_url, **kwargs)


def test_body_is_a_stateless_responses_request(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("responses", [{"content": "ok"}])
    request = build_request()
    assert provider(server.base_url).complete(request).content == "ok"
    (recorded,) = server.requests
    body = recorded.json()
    assert recorded.path == "/v1/responses"
    assert "messages" not in body
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["prompt_cache_key"] == SESSION_ID
    assert "prompt_cache_retention" not in body
    assert body["tool_choice"] == "auto"
    assert body["tools"][0] == {
        "type": "function",
        "name": "file_read",
        "description": "Read a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
        "strict": False,
    }
    kinds = [item.get("type") or item["role"] for item in body["input"]]
    assert kinds == [
        "system",
        "system",
        "system",
        "user",
        "assistant",
        "function_call",
        "function_call_output",
        "user",
        "user",
    ]
    call, output = body["input"][5:7]
    assert call == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "file_read",
        "arguments": '{"path":"app.py"}',
    }
    assert output["call_id"] == "call_1" and "1: x = 1" in output["output"]
    assert body["input"][-1] == {"role": "user", "content": "Task status: fix app.py"}


@pytest.mark.parametrize(
    ("mask", "choice"),
    [
        (ToolMask.only("file_read", "shell_exec"), "allowed_tools"),
        (ToolMask.only("file_read", mode="required"), "function"),
        (ToolMask.only(mode="auto"), "none"),
    ],
)
def test_masks_keep_the_tool_list_and_become_tool_choice(
    build_request: BuildRequest, fake_server: StartServer, mask: ToolMask, choice: str
) -> None:
    server = fake_server("responses", [{"content": "a"}, {"content": "b"}])
    openai = provider(server.base_url)
    openai.complete(build_request())
    openai.complete(build_request(mask))
    first, second = (r.json() for r in server.requests)
    assert second["tools"] == first["tools"]
    sent = second["tool_choice"]
    if choice == "allowed_tools":
        assert sent == {
            "type": "allowed_tools",
            "mode": "required",
            "tools": [
                {"type": "function", "name": "file_read"},
                {"type": "function", "name": "shell_exec"},
            ],
        }
    elif choice == "function":
        assert sent == {"type": "function", "name": "file_read"}
    else:
        assert sent == "none"


def test_usage_reports_cached_tokens(build_request: BuildRequest, fake_server: StartServer) -> None:
    usage = FakeUsage(1200, cached_tokens=1024, output_tokens=7)
    server = fake_server("responses", [{"content": "done"}], usage=usage)
    reply = provider(server.base_url).complete(build_request())
    assert reply.usage == Usage(
        input_tokens=1200,
        cached_tokens=1024,
        output_tokens=7,
        latency_s=reply.usage.latency_s,
        model="gpt-test",
    )


def test_reasoning_streams_and_tool_calls_come_back_canonical(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    reply = {
        "reasoning": "Read the file first.",
        "tool_calls": [{"name": "file_read", "arguments": {"path": "a.py", "limit": 3}}],
    }
    server = fake_server("responses", [reply])
    events = list(provider(server.base_url).stream(build_request()))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == reply["reasoning"]
    done = events[-1]
    assert isinstance(done, ReplyDone)
    (call,) = done.reply.tool_calls
    assert (call.id, call.name, call.arguments_json) == (
        "call_0_0",
        "file_read",
        '{"limit":3,"path":"a.py"}',
    )
    assert done.reply.finish_reason == "tool_calls"
    assert done.reply.provider_items == (
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Read the file first."}],
            "encrypted_content": "gAAAA-encrypted-0-20",
        },
        {"type": "function_call"},
    )


def test_generation_settings_and_cache_retention_are_sent(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    from contextengine.providers.wire import Generation

    server = fake_server("responses", [{"content": "ok"}])
    generation = Generation(max_tokens=300, temperature=0.2, reasoning_effort="low")
    provider(server.base_url, generation=generation, prompt_cache_retention="24h").complete(
        build_request()
    )
    body = server.requests[0].json()
    assert body["max_output_tokens"] == 300
    assert body["temperature"] == 0.2
    assert body["reasoning"] == {"effort": "low"}
    assert body["prompt_cache_retention"] == "24h"


def test_other_providers_items_are_not_sent(build_request: BuildRequest) -> None:
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s"}
    entry = AssistantEntry(
        text="Reading.",
        tool_calls=(ToolCallRecord(id="call_1", name="file_read", arguments_json="{}"),),
        provider_items=(thinking,),
    )
    request = build_request(history=(HISTORY[1], entry))
    items = responses_input(request.messages)
    assert thinking not in items
    assert {"role": "assistant", "content": "Reading."} in items


class Recording(StreamingProvider):
    """Passes requests to a real adapter and keeps the built requests."""

    def __init__(self, inner: OpenAIResponsesProvider) -> None:
        self.inner, self.model, self.requests = inner, inner.model, []

    def stream(self, request):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        return self.inner.stream(request)


STEPS = [
    {
        "reasoning": "Write the file first.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}],
    },
    {
        "reasoning": "Now check it.",
        "content": "Checking.",
        "tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}],
    },
    {"content": "Done: a.txt holds x."},
]


def test_a_multi_step_run_carries_encrypted_reasoning_on_a_stable_prefix(
    tmp_path: Path, fake_server: StartServer
) -> None:
    server = fake_server("responses", STEPS)
    recording = Recording(provider(server.base_url))
    agent = Agent(recording, tmp_path / "ws", Config())
    result = agent.run("Create a.txt holding x, then check it.")
    assert result.status == "completed" and result.final_answer == "Done: a.txt holds x."
    bodies = [r.json() for r in server.answered]
    assert len(bodies) == 3
    last = bodies[-1]["input"]
    reasoning = [i for i in last if i.get("type") == "reasoning"]
    assert [r["encrypted_content"] for r in reasoning] == [
        "gAAAA-encrypted-0-21",
        "gAAAA-encrypted-1-13",
    ]
    assert all("id" not in r for r in reasoning)
    # Each reasoning item comes back right before the items that followed it.
    first = last.index(reasoning[0])
    assert last[first + 1]["type"] == "function_call"
    assert last[first + 1]["name"] == "file_write"
    second = last.index(reasoning[1])
    message, call = last[second + 1 : second + 3]
    assert message["role"] == "assistant"
    assert message["content"] == [{"type": "output_text", "text": "Checking.", "annotations": []}]
    assert (call["type"], call["name"]) == ("function_call", "file_read")
    outputs = {i["call_id"] for i in last if i.get("type") == "function_call_output"}
    assert {i["call_id"] for i in last if i.get("type") == "function_call"} == outputs
    # The previous request's persisted input is sent again unchanged, in order.
    for request, previous, current in zip(recording.requests, bodies, bodies[1:], strict=False):
        n = len(responses_input(request.messages[: request.segments.persisted]))
        assert current["input"][:n] == previous["input"][:n]
        assert json.dumps(current["input"][:n]) == json.dumps(previous["input"][:n])


def _output_items() -> st.SearchStrategy[list[dict[str, Any]]]:
    text = st.text(max_size=20)
    reasoning = st.builds(
        lambda n, summary, secret: {
            "id": f"rs_{n}",
            "type": "reasoning",
            "status": "completed",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": secret,
        },
        st.integers(0, 99),
        text,
        text,
    )
    message = st.builds(
        lambda body: {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": body, "annotations": []}],
        },
        text.filter(str.strip),
    )
    call = st.builds(
        lambda n, name: {
            "id": f"fc_{n}",
            "type": "function_call",
            "status": "completed",
            "call_id": f"call_{n}",
            "name": name,
            "arguments": f'{{"n":{n}}}',
        },
        st.integers(0, 99),
        st.sampled_from(["file_read", "shell_exec"]),
    )
    return st.tuples(
        st.lists(reasoning, max_size=2), st.lists(message, max_size=1), st.lists(call, max_size=3)
    ).flatmap(lambda parts: st.permutations([*parts[0], *parts[1], *parts[2]]))


@given(_output_items())
def test_output_items_come_back_in_order_without_server_ids(items: list[dict[str, Any]]) -> None:
    from contextengine.providers.openai_responses import kept_item

    text = "".join(i["content"][0]["text"] for i in items if i["type"] == "message")
    calls = [
        {
            "id": i["call_id"],
            "type": "function",
            "function": {"name": i["name"], "arguments": i["arguments"]},
        }
        for i in items
        if i["type"] == "function_call"
    ]
    message = {
        "role": "assistant",
        "content": text,
        "provider_items": [kept_item(i) for i in items],
    }
    if calls:
        message["tool_calls"] = calls
    expected = [{k: v for k, v in i.items() if k not in ("id", "status")} for i in items]
    assert responses_input([message]) == expected
