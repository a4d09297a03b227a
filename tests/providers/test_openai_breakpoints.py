"""OpenAI explicit cache breakpoints (``prompt_cache_breakpoint`` / ``prompt_cache_options``)
in the bodies both OpenAI adapters send to a real local server."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from contextengine import AssistantEntry, Config, UserEntry
from contextengine.agent.loop import Agent
from contextengine.providers.breakpoints import has_explicit_breakpoints
from contextengine.providers.openai import OpenAIProvider
from contextengine.providers.openai_responses import OpenAIResponsesProvider
from contextengine.providers.wire import chat_messages, plain_text

from .conftest import BuildRequest, StartServer

NEW = "gpt-5.6-sol"
BREAKPOINT = {"mode": "explicit"}
STEPS = [
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}]},
    {"content": "Checking.", "tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]},
    {"content": "Done: a.txt holds x."},
]


def chat(base_url: str, model: str = NEW, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model, api_key="sk-test", base_url=base_url, **kwargs)


def responses(base_url: str, model: str = NEW, **kwargs: Any) -> OpenAIResponsesProvider:
    return OpenAIResponsesProvider(model, api_key="sk-test", base_url=base_url, **kwargs)


def marked(blocks_of: list[Any]) -> list[int]:
    """Indices whose content blocks end in a breakpoint."""
    return [
        i
        for i, blocks in enumerate(blocks_of)
        if isinstance(blocks, list) and blocks and blocks[-1].get("prompt_cache_breakpoint")
    ]


def without_marks(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with every breakpoint taken off their content blocks."""
    items = copy.deepcopy(items)
    for item in items:
        blocks = item.get("content", item.get("output"))
        if isinstance(blocks, list):
            for block in blocks:
                block.pop("prompt_cache_breakpoint", None)
    return items


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-5.6-sol", True),
        ("gpt-6-luna", True),
        ("gpt-6.2-astra", True),
        ("ft:gpt-5.6-terra:org::abc", True),
        ("openai/gpt-5.10", True),
        ("gpt-5.5", False),
        ("gpt-5", False),
        ("gpt-4o", False),
        ("gpt-oss-120b", False),
        ("o3", False),
        ("gpt-test", False),
    ],
)
def test_explicit_breakpoints_are_for_gpt_5_6_and_later(model: str, expected: bool) -> None:
    assert has_explicit_breakpoints(model) is expected


def test_chat_body_marks_the_builders_breakpoints(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "ok"}])
    request = build_request()
    chat(server.base_url).complete(request)
    body = server.requests[0].json()
    assert body["prompt_cache_options"] == {"mode": "explicit"}
    contents = [m["content"] for m in body["messages"]]
    # End of L1, of L2, of the previous step's history (the user turn before the latest
    # assistant reply) and of the persisted history (the reminder); the tail is unmarked.
    roles = [m["role"] for m in request.messages]
    assert roles[3] == "user" and roles[4] == "assistant" and request.segments.persisted == 7
    assert marked(contents) == [0, 1, 3, 6]
    for sent, built in zip(body["messages"], request.messages, strict=True):
        if built["role"] == "assistant":
            assert sent == built
        else:
            assert [b["type"] for b in sent["content"]] == ["text"]
            assert sent["content"][0]["text"] == built["content"]
    assert body["messages"][0]["content"][0]["prompt_cache_breakpoint"] == BREAKPOINT


def test_responses_body_marks_the_builders_breakpoints(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("responses", [{"content": "ok"}])
    request = build_request()
    responses(server.base_url).complete(request)
    body = server.requests[0].json()
    assert body["prompt_cache_options"] == {"mode": "explicit"}
    items = body["input"]
    blocks = [i.get("content", i.get("output")) for i in items]
    texts = {plain_text(m["content"]) for i, m in enumerate(request.messages) if i in (0, 1, 3, 6)}
    assert {blocks[i][-1]["text"] for i in marked(blocks)} == texts
    tool_output = next(i for i in items if i.get("type") == "function_call_output")
    tool_message = next(m for m in request.messages if m["role"] == "tool")
    assert tool_output["output"] == [
        {"type": "input_text", "text": plain_text(tool_message["content"])}
    ]
    for item in items:
        if item.get("role") in ("system", "user"):
            assert {b["type"] for b in item["content"]} == {"input_text"}


def test_a_breakpoint_on_an_assistant_reply_moves_to_the_input_before_it(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "ok"}])
    request = build_request(history=(UserEntry(text="hi"), AssistantEntry(text="Hello.")))
    assert request.messages[request.segments.persisted - 1]["role"] == "assistant"
    chat(server.base_url).complete(request)
    messages = server.requests[0].json()["messages"]
    assert marked([m["content"] for m in messages]) == [0, 1, 2]
    assert messages[3] == request.messages[3]


@pytest.mark.parametrize(
    ("model", "kwargs", "config"),
    [
        ("gpt-5.5", {}, Config()),
        ("gpt-4o", {}, Config()),
        (NEW, {"explicit_cache_breakpoints": False}, Config()),
        (NEW, {}, Config(cache_breakpoints=False)),
    ],
)
def test_other_models_and_switched_off_hints_send_todays_bodies(
    build_request: BuildRequest,
    fake_server: StartServer,
    model: str,
    kwargs: dict[str, Any],
    config: Config,
) -> None:
    chat_server = fake_server("openai", [{"content": "ok"}])
    responses_server = fake_server("responses", [{"content": "ok"}])
    request = build_request(config=config)
    chat(chat_server.base_url, model, **kwargs).complete(request)
    responses(responses_server.base_url, model, **kwargs).complete(request)
    chat_body, responses_body = chat_server.requests[0].json(), responses_server.requests[0].json()
    assert "prompt_cache_options" not in chat_body
    assert "prompt_cache_options" not in responses_body
    assert chat_body["messages"] == chat_messages(request)
    assert "prompt_cache_breakpoint" not in json.dumps(responses_body)


def test_explicit_breakpoints_can_be_asked_for_by_hand(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("responses", [{"content": "ok"}])
    responses(server.base_url, "my-deployment", explicit_cache_breakpoints=True).complete(
        build_request()
    )
    assert server.requests[0].json()["prompt_cache_options"] == {"mode": "explicit"}


@pytest.mark.parametrize("wire", ["openai", "responses"])
def test_each_request_marks_where_the_previous_one_wrote_on_an_unchanged_prefix(
    tmp_path: Path, fake_server: StartServer, wire: str
) -> None:
    server = fake_server(wire, STEPS)
    adapter = chat(server.base_url) if wire == "openai" else responses(server.base_url)
    result = Agent(adapter, tmp_path / "ws", Config()).run("Create a.txt holding x, check it.")
    assert result.status == "completed"
    key = "messages" if wire == "openai" else "input"
    bodies = [r.json()[key] for r in server.answered]
    assert len(bodies) == 3
    for previous, current in itertools.pairwise(bodies):
        last = max(marked([i.get("content", i.get("output")) for i in previous]))
        # The previous request's last breakpoint is marked again at the same item, and
        # everything up to it is the same blocks, marks aside.
        assert last in marked([i.get("content", i.get("output")) for i in current])
        assert without_marks(current[: last + 1]) == without_marks(previous[: last + 1])
