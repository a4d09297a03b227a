"""OpenAICompatibleProvider for vLLM, SGLang, llama.cpp, Ollama against a real local server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextengine import ConfigError, ToolMask
from contextengine.providers.openai_compatible import SERVERS, OpenAICompatibleProvider
from contextengine.types import ReplyDone, TextDelta, ToolCall

from .conftest import SESSION_ID, BuildRequest, StartServer
from .fake_servers import FakeUsage

SUBSET = ToolMask.only("file_")  # file_read and file_write of four tools; a call is required


def provider(base_url: str, server: str, **kwargs: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("local-model", base_url, server=server, **kwargs)  # type: ignore[arg-type]


def send(
    build_request: BuildRequest,
    fake_server: StartServer,
    server: str,
    mask: ToolMask | None = None,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, str]]:
    fake = fake_server("openai", [{"content": "ok"}])
    provider(fake.base_url, server, **kwargs).complete(build_request(mask))
    return fake.requests[0].json(), dict(fake.requests[0].headers)


@pytest.mark.parametrize("server", SERVERS)
def test_every_request_carries_the_session_id_and_unchanged_tools(
    build_request: BuildRequest, fake_server: StartServer, server: str
) -> None:
    request = build_request(SUBSET)
    body, headers = send(build_request, fake_server, server, SUBSET)
    assert headers["x-session-id"] == SESSION_ID
    assert body["user"] == SESSION_ID
    assert body["model"] == "local-model"
    assert json.dumps(body["tools"]) == json.dumps(request.tools)
    assert body["messages"] == request.messages
    assert body["stream_options"] == {"include_usage": True}
    assert "prompt_cache_key" not in body


def calls_schema_names(schema: dict[str, Any]) -> list[str]:
    assert schema["type"] == "array"
    assert schema["minItems"] == 1
    names = []
    for option in schema["items"]["anyOf"]:
        assert option["required"] == ["name", "parameters"]
        names.extend(option["properties"]["name"]["enum"])
    return names


def test_vllm_constrains_a_subset_with_structured_outputs(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body, _ = send(build_request, fake_server, "vllm", SUBSET)
    assert body["tool_choice"] == "auto"
    schema = body["structured_outputs"]["json"]
    assert calls_schema_names(schema) == ["file_read", "file_write"]
    read = schema["items"]["anyOf"][0]["properties"]["parameters"]
    assert read == build_request().tools[0]["function"]["parameters"]


def test_vllm_legacy_servers_get_guided_json(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body, _ = send(build_request, fake_server, "vllm", SUBSET, legacy_guided_json=True)
    assert body["tool_choice"] == "auto"
    assert "structured_outputs" not in body
    assert calls_schema_names(body["guided_json"]) == ["file_read", "file_write"]


def test_sglang_constrains_a_subset_with_a_json_schema_response_format(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body, _ = send(build_request, fake_server, "sglang", SUBSET)
    assert body["tool_choice"] == "auto"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "tool_calls"
    assert calls_schema_names(body["response_format"]["json_schema"]["schema"]) == [
        "file_read",
        "file_write",
    ]


NAMED = {"type": "function", "function": {"name": "shell_exec"}}


CONSTRAINT_FIELDS = {"structured_outputs", "guided_json", "response_format", "grammar"}


@pytest.mark.parametrize(
    ("server", "single", "subset"),
    [
        ("sglang", NAMED, "auto"),
        ("generic", NAMED, "required"),
        ("llamacpp", "none", "none"),
        ("ollama", "auto", "auto"),
    ],
)
def test_tool_choice_per_server(
    build_request: BuildRequest,
    fake_server: StartServer,
    server: str,
    single: Any,
    subset: str,
) -> None:
    one, _ = send(build_request, fake_server, server, ToolMask.only("shell_exec"))
    assert one["tool_choice"] == single
    assert bool(CONSTRAINT_FIELDS & set(one)) is (server in ("llamacpp", "ollama"))
    several, _ = send(build_request, fake_server, server, SUBSET)
    assert several["tool_choice"] == subset
    everything, _ = send(build_request, fake_server, server, ToolMask(mode="required"))
    assert everything["tool_choice"] == "required"
    free, _ = send(build_request, fake_server, server, ToolMask.only("file_", mode="auto"))
    assert free["tool_choice"] == "auto"
    assert not CONSTRAINT_FIELDS & (set(everything) | set(free))


def test_vllm_constrains_every_required_call_with_structured_output(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    """vLLM 0.32's named/required tool_choice leaves the arguments free; the schema binds both."""
    for mask, names in (
        (ToolMask.only("shell_exec"), {"shell_exec"}),
        (SUBSET, None),
        (ToolMask(mode="required"), None),
    ):
        body, _ = send(build_request, fake_server, "vllm", mask)
        assert body["tool_choice"] == "auto"
        schema = body["structured_outputs"]["json"]
        allowed = {item["properties"]["name"]["enum"][0] for item in schema["items"]["anyOf"]}
        if names is not None:
            assert allowed == names
        if mask.allow is None:
            assert allowed == {t["function"]["name"] for t in body["tools"]}
    free, _ = send(build_request, fake_server, "vllm", ToolMask.only("file_", mode="auto"))
    assert free["tool_choice"] == "auto" and "structured_outputs" not in free


def test_llamacpp_constrains_required_calls_with_a_grammar_and_no_tool_choice(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    """llama-server refuses a grammar next to tools unless tool_choice is none."""
    body, _ = send(build_request, fake_server, "llamacpp", SUBSET)
    assert body["tool_choice"] == "none"
    assert json.dumps(body["tools"]) == json.dumps(build_request().tools)
    name_rule = next(r for r in body["grammar"].splitlines() if r.startswith("name ::="))
    assert name_rule == 'name ::= "\\"file_read\\"" | "\\"file_write\\""'
    single, _ = send(build_request, fake_server, "llamacpp", ToolMask.only("shell_exec"))
    assert 'name ::= "\\"shell_exec\\""' in single["grammar"]
    free, _ = send(build_request, fake_server, "llamacpp", ToolMask.only("file_", mode="auto"))
    assert free["tool_choice"] == "auto" and "grammar" not in free


def test_ollama_constrains_required_calls_with_a_json_schema_format(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body, _ = send(build_request, fake_server, "ollama", SUBSET)
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert calls_schema_names(schema) == ["file_read", "file_write"]


@pytest.mark.parametrize("server", ["llamacpp", "ollama"])
def test_grammar_and_format_constrained_arrays_come_back_as_tool_calls(
    build_request: BuildRequest, fake_server: StartServer, server: str
) -> None:
    array = [{"name": "file_read", "parameters": {"path": "a.py"}}]
    fake = fake_server("openai", [{"content": json.dumps(array)}])
    reply = provider(fake.base_url, server).complete(build_request(SUBSET))
    assert [(c.name, c.arguments_json) for c in reply.tool_calls] == [
        ("file_read", '{"path":"a.py"}')
    ]
    assert reply.content == ""


def test_llamacpp_asks_for_prompt_caching(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    body, _ = send(build_request, fake_server, "llamacpp")
    assert body["cache_prompt"] is True
    other, _ = send(build_request, fake_server, "vllm")
    assert "cache_prompt" not in other


def test_constrained_call_array_comes_back_as_tool_calls(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    array = [
        {"name": "file_write", "parameters": {"path": "a.py", "content": "x"}},
        {"name": "file_read", "parameters": {"path": "a.py"}},
    ]
    fake = fake_server("openai", [{"content": json.dumps(array)}])
    events = list(provider(fake.base_url, "vllm").stream(build_request(SUBSET)))
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert isinstance(events[-1], ReplyDone)
    reply = events[-1].reply
    assert reply.content == ""
    assert reply.finish_reason == "tool_calls"
    assert [(c.name, c.arguments_json) for c in reply.tool_calls] == [
        ("file_write", '{"content":"x","path":"a.py"}'),
        ("file_read", '{"path":"a.py"}'),
    ]
    assert len({c.id for c in reply.tool_calls}) == 2


def test_constrained_reply_with_native_tool_calls_is_kept(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    script = [{"tool_calls": [{"name": "file_read", "arguments": {"path": "b.py"}}]}]
    fake = fake_server("openai", script)
    reply = provider(fake.base_url, "sglang").complete(build_request(SUBSET))
    assert reply.tool_calls == (ToolCall("call_0_0", "file_read", '{"path":"b.py"}'),)


def test_constrained_reply_that_is_not_a_call_array_stays_text(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    fake = fake_server("openai", [{"content": "I refuse"}])
    reply = provider(fake.base_url, "vllm").complete(build_request(SUBSET))
    assert reply.content == "I refuse"
    assert reply.tool_calls == ()


def test_unconstrained_text_streams_as_usual(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    fake = fake_server("openai", [{"content": "hello there"}])
    events = list(provider(fake.base_url, "vllm").stream(build_request()))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hello there"


def test_cached_tokens_come_from_prompt_tokens_details(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    usage = FakeUsage(900, cached_tokens=800, output_tokens=5)
    fake = fake_server("openai", [{"content": "ok"}], usage=usage)
    reply = provider(fake.base_url, "sglang").complete(build_request())
    assert (reply.usage.input_tokens, reply.usage.cached_tokens) == (900, 800)
    assert (reply.usage.output_tokens, reply.usage.model) == (5, "local-model")


def test_llamacpp_cache_hits_are_read_from_timings(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    usage = FakeUsage(900, cached_tokens=850, output_tokens=5)
    fake = fake_server("openai", [{"content": "ok"}], usage=usage, timings_only=True)
    reply = provider(fake.base_url, "llamacpp").complete(build_request())
    assert (reply.usage.input_tokens, reply.usage.cached_tokens) == (900, 850)


def test_retries_on_server_errors(build_request: BuildRequest, fake_server: StartServer) -> None:
    fake = fake_server("openai", [{"content": "ok"}], failures=[503])
    assert provider(fake.base_url, "vllm").complete(build_request()).content == "ok"
    assert len(fake.requests) == 2


def test_unknown_server_and_reserved_params_are_refused() -> None:
    with pytest.raises(ConfigError, match="unknown server 'tgi'; known: vllm, sglang"):
        provider("http://127.0.0.1:9/v1", "tgi")
    with pytest.raises(ConfigError, match="user"):
        provider("http://127.0.0.1:9/v1", "vllm", user="someone")
