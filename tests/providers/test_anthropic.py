"""AnthropicProvider against a real local server speaking the Messages stream format."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from contextengine import (
    AssistantEntry,
    Config,
    ConfigError,
    MissingAPIKeyError,
    ProviderError,
    Request,
    ToolCallRecord,
    ToolMask,
    ToolResultEntry,
    Usage,
    UserEntry,
)
from contextengine.providers.anthropic import PREFILL, AnthropicProvider, anthropic_body
from contextengine.types import ReasoningDelta, ReplyDone, TextDelta, ToolCall

from .conftest import BuildRequest, StartServer
from .fake_servers import FakeUsage, RawReply


def provider(base_url: str, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=base_url, **kwargs)


def send(build_request: BuildRequest, fake_server: StartServer, **build: Any) -> dict[str, Any]:
    server = fake_server("anthropic", [{"content": "ok"}])
    provider(server.base_url).complete(build_request(**build))
    assert server.requests[0].path == "/v1/messages"
    return server.requests[0].json()


def blocks_with_cache_control(body: dict[str, Any]) -> list[str]:
    marked = [b["text"] for b in body.get("system", []) if "cache_control" in b]
    for turn in body["messages"]:
        for block in turn["content"]:
            if "cache_control" in block:
                assert block["cache_control"] == {"type": "ephemeral"}
                marked.append(block.get("text") or block["type"])
    return marked


def test_l1_and_l2_become_cached_system_blocks(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body = send(build_request, fake_server)
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are a careful coding agent.",
            "cache_control": {"type": "ephemeral"},
        },
        {
            "type": "text",
            "text": '<project-rules file="CODE_LAW.md">\nAlways run the tests.\n</project-rules>',
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 4096
    assert body["stream"] is True


def test_cache_control_sits_exactly_on_the_four_breakpoint_blocks(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    request = build_request()
    body = send(build_request, fake_server)
    history_end = request.messages[request.breakpoints[-1]]["content"]
    assert blocks_with_cache_control(body) == [
        "You are a careful coding agent.",
        '<project-rules file="CODE_LAW.md">\nAlways run the tests.\n</project-rules>',
        # The previous step's history ended before the latest assistant reply.
        "Fix the bug in app.py",
        history_end,
    ]
    assert history_end == "<system-reminder>\nUpdate the plan.\n</system-reminder>"


def test_no_cache_control_when_cache_hints_are_switched_off(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body = send(build_request, fake_server, config=Config(cache_breakpoints=False))
    assert blocks_with_cache_control(body) == []


class ManyBreakpoints(Request):
    """A request reporting more breakpoints than Anthropic accepts."""

    @property
    def breakpoints(self) -> list[int]:
        return list(range(len(self.messages)))


def test_at_most_four_cache_breakpoints_and_the_last_ones_win(
    build_request: BuildRequest,
) -> None:
    base = build_request()
    many = ManyBreakpoints(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})
    assert blocks_with_cache_control(anthropic_body(many)) == [
        "tool_use",
        "tool_result",
        "<system-reminder>\nUpdate the plan.\n</system-reminder>",
        "Task status: fix app.py",
    ]


def test_mid_history_system_message_becomes_a_wrapped_user_note(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body = send(build_request, fake_server)
    first = body["messages"][0]
    assert first["role"] == "user"
    assert first["content"][0] == {
        "type": "text",
        "text": "<system-reminder>\nEarlier: the user asked for a fix.\n\n"
        "(Archived steps are kept verbatim in `a.md`.)\n</system-reminder>",
    }
    assert first["content"][1]["text"] == "Fix the bug in app.py"
    assert len(body["system"]) == 2


def test_tool_use_and_tool_result_keep_ids_and_turns_alternate(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body = send(build_request, fake_server)
    roles = [turn["role"] for turn in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Reading it first."},
        {"type": "tool_use", "id": "call_1", "name": "file_read", "input": {"path": "app.py"}},
    ]
    result, reminder, tail = body["messages"][2]["content"]
    assert result["type"] == "tool_result"
    assert result["tool_use_id"] == "call_1"
    assert "1: x = 1" in result["content"]
    assert reminder["text"] == "<system-reminder>\nUpdate the plan.\n</system-reminder>"
    assert tail == {"type": "text", "text": "Task status: fix app.py"}


def test_broken_and_empty_assistant_turns_stay_valid(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    history = (
        UserEntry(text="go"),
        AssistantEntry(
            tool_calls=(ToolCallRecord(id="c9", name="shell_exec", arguments_json="{bad"),)
        ),
        ToolResultEntry(call_id="c9", tool_name="shell_exec", status="error", content=""),
        AssistantEntry(text=""),
        UserEntry(text="again"),
    )
    body = send(build_request, fake_server, history=history)
    assistant = body["messages"][1]["content"]
    assert assistant == [
        {
            "type": "tool_use",
            "id": "c9",
            "name": "shell_exec",
            "input": {"invalid_arguments": "{bad"},
        }
    ]
    assert body["messages"][3] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "(empty)"}],
    }


def test_tools_are_translated_once_and_never_change_with_the_mask(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    plain = send(build_request, fake_server)
    masked = send(build_request, fake_server, mask=ToolMask.only("file_read"))
    assert masked["tools"] == plain["tools"]
    assert plain["tools"][0] == {
        "name": "file_read",
        "description": "Read a file.",
        "input_schema": {
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "type": "object",
        },
    }
    assert [t["name"] for t in plain["tools"]] == [
        "file_read",
        "file_write",
        "shell_exec",
        "todo_write",
    ]


@pytest.mark.parametrize(
    ("mask", "tool_choice"),
    [
        (None, {"type": "auto"}),
        (ToolMask(mode="required"), {"type": "any"}),
        (ToolMask.only("file_read"), {"type": "tool", "name": "file_read"}),
        (ToolMask.only("file_"), {"type": "any"}),
        (ToolMask.only("file_", mode="auto"), {"type": "auto"}),
        (ToolMask(allow=(), mode="auto"), {"type": "none"}),
    ],
)
def test_mask_becomes_tool_choice(
    build_request: BuildRequest,
    fake_server: StartServer,
    mask: ToolMask | None,
    tool_choice: dict[str, str],
) -> None:
    assert send(build_request, fake_server, mask=mask)["tool_choice"] == tool_choice


def test_a_subset_of_several_tools_is_named_in_an_assistant_prefill(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    plain = send(build_request, fake_server)
    for mask, choice in (
        (ToolMask.only("file_"), {"type": "any"}),
        (ToolMask.only("file_", mode="auto"), {"type": "auto"}),
    ):
        body = send(build_request, fake_server, mask=mask)
        assert body["tool_choice"] == choice
        assert body["tools"] == plain["tools"]
        # Everything before the prefill is the unmasked body, cache marks included.
        assert body["messages"][:-1] == plain["messages"]
        assert body["messages"][-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": PREFILL.format(names="file_read, file_write")}],
        }
        assert not body["messages"][-1]["content"][0]["text"][-1].isspace()


@pytest.mark.parametrize(
    "mask",
    [None, ToolMask(mode="required"), ToolMask.only("file_read"), ToolMask(allow=())],
)
def test_no_prefill_when_the_choice_names_the_tools(
    build_request: BuildRequest, fake_server: StartServer, mask: ToolMask | None
) -> None:
    assert send(build_request, fake_server, mask=mask)["messages"][-1]["role"] == "user"


def test_extended_thinking_gets_neither_prefill_nor_a_forced_choice(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 1024}
    server = fake_server("anthropic", [{"content": "ok"}] * 3)
    client = provider(server.base_url, thinking=thinking)
    for mask in (ToolMask.only("file_"), ToolMask.only("file_read"), ToolMask(mode="required")):
        client.complete(build_request(mask))
    for recorded in server.requests:
        body = recorded.json()
        assert body["thinking"] == thinking
        assert body["tool_choice"] == {"type": "auto"}
        assert body["messages"][-1]["role"] == "user"
    disabled = anthropic_body(build_request(ToolMask.only("file_")), thinking=False)
    assert disabled["messages"][-1]["role"] == "assistant"


def test_prefill_can_be_switched_off_for_models_that_refuse_it(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", [{"content": "ok"}])
    provider(server.base_url, mask_prefill=False).complete(build_request(ToolMask.only("file_")))
    body = server.requests[0].json()
    assert body["tool_choice"] == {"type": "any"}
    assert body["messages"][-1]["role"] == "user"
    assert "mask_prefill" not in body


def test_a_model_that_refuses_prefill_is_asked_again_without_it(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    refusal = RawReply(
        json.dumps(
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "Prefilling assistant messages is not supported for this model.",
                },
            }
        ).encode(),
        status=400,
        content_type="application/json",
    )
    server = fake_server("anthropic", [refusal, {"content": "ok"}, {"content": "again"}])
    client = provider(server.base_url)
    request = build_request(ToolMask.only("file_"))
    assert client.complete(request).content == "ok"
    assert client.complete(request).content == "again"
    roles = [r.json()["messages"][-1]["role"] for r in server.requests]
    assert roles == ["assistant", "user", "user"]  # refused once, then never sent again
    assert client.mask_prefill is False


def test_other_bad_requests_are_not_taken_for_a_prefill_refusal(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    bad = RawReply(
        b'{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}',
        status=400,
        content_type="application/json",
    )
    server = fake_server("anthropic", [bad, {"content": "ok"}])
    with pytest.raises(ProviderError, match=r"HTTP 400: .*max_tokens: too big"):
        provider(server.base_url).complete(build_request(ToolMask.only("file_")))
    assert len(server.requests) == 1


def test_streamed_text_thinking_and_tool_use_are_mapped(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    script = [
        {
            "reasoning": "Check first.",
            "content": "Reading the file.",
            "tool_calls": [{"name": "file_read", "arguments": {"path": "app.py", "end_line": 3}}],
        }
    ]
    server = fake_server("anthropic", script)
    events = list(provider(server.base_url).stream(build_request()))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Reading the file."
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Check first."
    reply = events[-1].reply if isinstance(events[-1], ReplyDone) else None
    assert reply is not None
    assert reply.content == "Reading the file."
    assert reply.reasoning == "Check first."
    assert reply.tool_calls == (
        ToolCall("toolu_0_0", "file_read", '{"end_line":3,"path":"app.py"}'),
    )
    assert reply.finish_reason == "tool_calls"


def test_usage_is_normalized_to_include_cache_reads_and_writes(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    usage = FakeUsage(5000, cached_tokens=4000, cache_write_tokens=600, output_tokens=42)
    server = fake_server("anthropic", [{"content": "done"}], usage=usage)
    reply = provider(server.base_url).complete(build_request())
    assert reply.finish_reason == "stop"
    assert reply.usage == Usage(
        input_tokens=5000,
        cached_tokens=4000,
        cache_write_tokens=600,
        output_tokens=42,
        latency_s=reply.usage.latency_s,
        model="claude-test",
    )
    assert reply.usage.uncached_tokens == 400
    assert reply.usage.latency_s > 0


def test_retries_rate_limits_and_overload(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", [{"content": "after retry"}], failures=[429, 529])
    assert provider(server.base_url).complete(build_request()).content == "after retry"
    assert len(server.requests) == 3


def test_retries_a_timed_out_request(build_request: BuildRequest, fake_server: StartServer) -> None:
    server = fake_server("anthropic", [{"content": "after timeout"}], stalls=1)
    reply = provider(server.base_url, timeout=0.3).complete(build_request())
    assert reply.content == "after timeout"
    assert len(server.requests) == 2


def test_error_after_retries_is_one_provider_error(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", [{"content": "never"}], failures=[500, 500])
    with pytest.raises(
        ProviderError, match=r"^anthropic claude-test: HTTP 500: .*injected failure"
    ):
        provider(server.base_url, max_retries=1).complete(build_request())
    assert len(server.requests) == 2


def test_missing_api_key_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match=r"anthropic: no API key; .*ANTHROPIC_API_KEY"):
        AnthropicProvider("claude-test")


def test_params_are_sent_and_reserved_ones_refused(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", [{"content": "ok"}])
    provider(server.base_url, max_tokens=100, temperature=0.2).complete(build_request())
    body = server.requests[0].json()
    assert (body["max_tokens"], body["temperature"]) == (100, 0.2)
    with pytest.raises(ConfigError, match="system"):
        provider(server.base_url, system="x")


THINKING_STEPS = [
    {
        "reasoning": "Write it first.",
        "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}],
    },
    {"content": "Done: a.txt now holds x, written with file_write."},
]


def test_thinking_blocks_go_back_signed_in_the_tool_loop(
    tmp_path: Any, fake_server: StartServer
) -> None:
    from contextengine.agent.loop import Agent

    server = fake_server("anthropic", THINKING_STEPS)
    thinking = {"type": "enabled", "budget_tokens": 1024}
    agent = Agent(provider(server.base_url, thinking=thinking), tmp_path / "ws", Config())
    assert agent.run("Create a.txt holding x.").status == "completed"
    first, second = (r.json() for r in server.answered)
    assert first["thinking"] == thinking
    (turn,) = [t for t in second["messages"] if t["role"] == "assistant"]
    assert turn["content"][0] == {
        "type": "thinking",
        "thinking": "Write it first.",
        "signature": "sig",
    }
    assert turn["content"][1]["type"] == "tool_use"


def test_thinking_blocks_stay_home_while_thinking_is_off(build_request: BuildRequest) -> None:
    signed = {"type": "thinking", "thinking": "hm", "signature": "s"}
    entry = AssistantEntry(
        text="Reading.",
        tool_calls=(ToolCallRecord(id="call_1", name="file_read", arguments_json="{}"),),
        provider_items=(signed,),
    )
    request = build_request(history=(UserEntry(text="go"), entry))
    (turn,) = [
        t for t in anthropic_body(request, thinking=True)["messages"] if t["role"] == "assistant"
    ]
    assert turn["content"][0] == signed
    assert '"thinking"' not in json.dumps(anthropic_body(request))


def test_one_hour_cache_ttl_marks_every_breakpoint(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", [{"content": "ok"}])
    provider(server.base_url, cache_ttl="1h").complete(build_request())
    body = server.requests[0].json()
    marks = [b["cache_control"] for b in body["system"]]
    marks += [
        b["cache_control"] for t in body["messages"] for b in t["content"] if "cache_control" in b
    ]
    assert marks == [{"type": "ephemeral", "ttl": "1h"}] * 4
    with pytest.raises(ValueError, match="cache_ttl"):
        provider(server.base_url, cache_ttl="2h")  # type: ignore[arg-type]


def test_deferred_tools_are_sent_with_defer_loading_after_the_tool_search_tool(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    request = dataclasses.replace(
        build_request(), deferred_tools=frozenset({"shell_exec", "todo_write"})
    )
    server = fake_server("anthropic", [{"content": "one"}])
    provider(server.base_url).complete(request)
    first = server.requests[0].json()
    command = {"type": "object", "properties": {"command": {"type": "string"}}}
    assert first["tools"] == [
        {
            "name": "file_read",
            "description": "Read a file.",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
        {
            "name": "file_write",
            "description": "Write a file.",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
        {
            "name": "shell_exec",
            "description": "Run a shell command.",
            "input_schema": {**command, "required": ["command"]},
            "defer_loading": True,
        },
        {
            "name": "todo_write",
            "description": "Replace the todo list.",
            "input_schema": {"type": "object", "properties": {}},
            "defer_loading": True,
        },
        {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    ]
    assert "anthropic-beta" not in server.requests[0].headers, "generally available"


def test_without_deferred_tools_no_tool_search_tool_is_sent(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    tools = send(build_request, fake_server)["tools"]
    assert [t["name"] for t in tools] == ["file_read", "file_write", "shell_exec", "todo_write"]
    assert not [t for t in tools if "defer_loading" in t]


def test_a_server_tool_search_goes_back_in_its_turn_before_the_tool_use(
    tmp_path: Any, fake_server: StartServer
) -> None:
    from contextengine.agent.loop import Agent

    script = [
        {
            "tool_search": {"query": "write a file", "found": ["file_write"]},
            "tool_calls": [
                {"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}
            ],
        },
        {"content": "Done: a.txt holds x."},
    ]
    server = fake_server("anthropic", script)
    agent = Agent(provider(server.base_url), tmp_path / "ws", Config())
    assert agent.run("Create a.txt holding x.").status == "completed"
    second = server.answered[1].json()
    (turn,) = [t for t in second["messages"] if t["role"] == "assistant"]
    use, result, call = turn["content"]
    assert use == {
        "type": "server_tool_use",
        "id": "srvtoolu_0",
        "name": "tool_search_tool_bm25",
        "input": {"query": "write a file"},
    }
    assert result == {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_0",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "file_write"}],
        },
    }
    assert call["type"] == "tool_use" and call["name"] == "file_write"
