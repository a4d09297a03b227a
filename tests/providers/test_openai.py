"""OpenAIProvider against a real local server speaking the Chat Completions stream format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextengine import Config, ConfigError, MissingAPIKeyError, ProviderError, ToolMask, Usage
from contextengine.providers.openai import OpenAIProvider
from contextengine.types import ReasoningDelta, ReplyDone, TextDelta, ToolCall

from .conftest import SESSION_ID, BuildRequest, StartServer
from .fake_servers import FakeUsage

TOOL_REPLY = {
    "content": "Let me check.",
    "reasoning": "The file may be stale.",
    "tool_calls": [
        {"name": "file_read", "arguments": {"path": "app.py", "end_line": 9}},
        {"name": "shell_exec", "arguments": '{"command": "ls'},
    ],
}


def provider(base_url: str, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider("gpt-test", api_key="sk-test", base_url=base_url, **kwargs)


def sent_body(server: Any, number: int = -1) -> dict[str, Any]:
    return server.requests[number].json()


def test_request_carries_messages_tools_and_session_cache_key(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "ok"}])
    request = build_request()
    provider(server.base_url, temperature=0).complete(request)
    body = sent_body(server)
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "gpt-test"
    assert body["prompt_cache_key"] == SESSION_ID
    assert body["messages"] == request.messages
    assert body["tools"] == request.tools
    assert body["tool_choice"] == "auto"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0


def test_no_cache_key_when_cache_hints_are_switched_off(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "ok"}])
    provider(server.base_url).complete(build_request(config=Config(cache_breakpoints=False)))
    assert "prompt_cache_key" not in sent_body(server)


def function(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


@pytest.mark.parametrize(
    ("mask", "tool_choice"),
    [
        (None, "auto"),
        (ToolMask(mode="required"), "required"),
        (ToolMask.only("file_read"), function("file_read")),
        (
            ToolMask.only("file_"),
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [function("file_read"), function("file_write")],
                },
            },
        ),
        (
            ToolMask.only("file_read", mode="auto"),
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "auto", "tools": [function("file_read")]},
            },
        ),
        (ToolMask(allow=(), mode="auto"), "none"),
    ],
)
def test_mask_becomes_tool_choice_and_tools_stay_byte_identical(
    build_request: BuildRequest,
    fake_server: StartServer,
    mask: ToolMask | None,
    tool_choice: Any,
) -> None:
    server = fake_server("openai", [{"content": "a"}, {"content": "b"}])
    adapter = provider(server.base_url)
    adapter.complete(build_request())
    adapter.complete(build_request(mask))
    unmasked, masked = sent_body(server, 0), sent_body(server, 1)
    assert masked["tool_choice"] == tool_choice
    assert json.dumps(masked["tools"]) == json.dumps(unmasked["tools"])
    assert json.dumps(masked["messages"]) == json.dumps(unmasked["messages"])


def test_streamed_text_reasoning_and_tool_calls_are_mapped(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [TOOL_REPLY])
    events = list(provider(server.base_url).stream(build_request()))
    text = [e.text for e in events if isinstance(e, TextDelta)]
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    assert len(text) > 1
    assert "".join(text) == "Let me check."
    assert "".join(reasoning) == "The file may be stale."
    assert isinstance(events[-1], ReplyDone)
    reply = events[-1].reply
    assert reply.content == "Let me check."
    assert reply.reasoning == "The file may be stale."
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == (
        ToolCall("call_0_0", "file_read", '{"end_line":9,"path":"app.py"}'),
        ToolCall("call_0_1", "shell_exec", '{"command": "ls'),
    )


def test_usage_reads_cached_tokens_and_measures_latency(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server(
        "openai", [{"content": "done"}], usage=FakeUsage(1200, cached_tokens=1024, output_tokens=7)
    )
    reply = provider(server.base_url).complete(build_request())
    assert reply.finish_reason == "stop"
    assert reply.usage.latency_s > 0
    assert reply.usage == Usage(
        input_tokens=1200,
        cached_tokens=1024,
        output_tokens=7,
        latency_s=reply.usage.latency_s,
        model="gpt-test",
    )


def test_default_fake_usage_reports_the_shared_prefix_as_cached(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "a"}, {"content": "b"}])
    adapter = provider(server.base_url)
    first = adapter.complete(build_request())
    second = adapter.complete(build_request())
    assert first.usage.cached_tokens == 0
    assert 0 < second.usage.cached_tokens <= second.usage.input_tokens


@pytest.mark.parametrize("failures", [[429], [500], [429, 500]])
def test_retries_rate_limits_and_server_errors(
    build_request: BuildRequest, fake_server: StartServer, failures: list[int]
) -> None:
    server = fake_server("openai", [{"content": "after retry"}], failures=failures)
    reply = provider(server.base_url).complete(build_request())
    assert reply.content == "after retry"
    assert len(server.requests) == len(failures) + 1
    assert len(server.answered) == 1


def test_retries_a_timed_out_request(build_request: BuildRequest, fake_server: StartServer) -> None:
    server = fake_server("openai", [{"content": "after timeout"}], stalls=1)
    reply = provider(server.base_url, timeout=0.3).complete(build_request())
    assert reply.content == "after timeout"
    assert len(server.requests) == 2


def test_timeout_after_retries_is_a_provider_error(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "never"}], stalls=1)
    with pytest.raises(ProviderError, match=r"^openai gpt-test: request timed out$"):
        provider(server.base_url, timeout=0.3, max_retries=0).complete(build_request())


def test_error_after_retries_is_one_provider_error(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [{"content": "never"}], failures=[500, 500, 500])
    with pytest.raises(ProviderError, match=r"^openai gpt-test: HTTP 500: .*injected failure"):
        provider(server.base_url, max_retries=1).complete(build_request())
    assert len(server.requests) == 2


def test_an_unreachable_server_is_a_provider_error(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [])
    base_url = server.base_url
    server.stop()
    with pytest.raises(ProviderError, match="cannot connect"):
        provider(base_url, max_retries=0).complete(build_request())


def test_script_exhaustion_fails_fast_without_retries(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", [])
    with pytest.raises(ProviderError, match="script exhausted"):
        provider(server.base_url).complete(build_request())
    assert len(server.requests) == 1


def test_missing_api_key_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match=r"openai: no API key; .*OPENAI_API_KEY"):
        OpenAIProvider("gpt-test")


def test_api_key_from_environment(
    monkeypatch: pytest.MonkeyPatch, build_request: BuildRequest, fake_server: StartServer
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server = fake_server("openai", [{"content": "ok"}])
    OpenAIProvider("gpt-test", base_url=server.base_url).complete(build_request())
    assert server.requests[0].headers["authorization"] == "Bearer sk-env"


def test_params_cannot_replace_what_the_adapter_sends() -> None:
    with pytest.raises(ConfigError, match="prompt_cache_key"):
        OpenAIProvider("gpt-test", api_key="k", prompt_cache_key="x")


def test_provider_items_of_other_adapters_stay_out_of_chat_messages(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    from contextengine import AssistantEntry, UserEntry

    entry = AssistantEntry(text="Hello.", provider_items=({"type": "reasoning", "summary": []},))
    request = build_request(history=(UserEntry(text="hi"), entry, UserEntry(text="again")))
    assert any("provider_items" in m for m in request.messages)
    server = fake_server("openai", [{"content": "ok"}])
    provider(server.base_url).complete(request)
    sent = sent_body(server)["messages"]
    assert all("provider_items" not in m for m in sent)
    assert {"role": "assistant", "content": "Hello."} in sent
