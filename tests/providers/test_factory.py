"""make_provider: names to adapters, defaults, and clear errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from contextengine import ConfigError, MissingAPIKeyError
from contextengine.cli import main
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.factory import LOCAL_BASE_URLS, PROVIDER_NAMES, make_provider
from contextengine.providers.openai import OpenAIProvider
from contextengine.providers.openai_compatible import OpenAICompatibleProvider
from contextengine.providers.openai_responses import OpenAIResponsesProvider
from contextengine.providers.wire import Generation

from .conftest import BuildRequest, StartServer


def test_hosted_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    openai = make_provider("openai", "gpt-x")
    chat = make_provider("openai-chat", "gpt-x")
    anthropic = make_provider("anthropic", "claude-x")
    assert isinstance(openai, OpenAIResponsesProvider)
    assert isinstance(chat, OpenAIProvider)
    assert isinstance(anthropic, AnthropicProvider)
    assert (openai.model, chat.model, anthropic.model) == ("gpt-x", "gpt-x", "claude-x")


def test_each_provider_reports_how_long_its_cache_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    lifetime = {
        name: make_provider(name, "m", **settings).cache_policy.lifetime_s
        for name, settings in {
            "anthropic": {},
            "openai": {},
            "vllm": {"cache_ttl": "1h", "prompt_cache_retention": "24h"},
        }.items()
    }
    assert lifetime == {"anthropic": 300, "openai": 300, "vllm": 300}
    assert make_provider("anthropic", "m", cache_ttl="1h").cache_policy.lifetime_s == 3600
    day = {"prompt_cache_retention": "24h"}
    assert make_provider("openai", "m", **day).cache_policy.lifetime_s == 86_400
    assert make_provider("openai-chat", "m", **day).cache_policy.lifetime_s == 86_400
    deepseek = make_provider("openai-compatible", "deepseek/deepseek-chat", base_url="http://h")
    assert deepseek.cache_policy.read_price == pytest.approx(0.07 / 0.27), "the model's price"


@pytest.mark.parametrize("name", ["vllm", "sglang", "llamacpp", "ollama"])
def test_self_hosted_servers_default_to_their_local_url(name: str) -> None:
    provider = make_provider(name, "m")
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.server == name
    assert provider.base_url == LOCAL_BASE_URLS[name]


def test_single_model_servers_need_no_model_name() -> None:
    assert make_provider("llamacpp").model == "default"
    assert make_provider("sglang").model == "default"
    with pytest.raises(ConfigError, match="provider 'vllm' needs a model name"):
        make_provider("vllm")


def test_openai_compatible_is_generic_and_needs_a_base_url(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    with pytest.raises(ConfigError, match="needs a base URL"):
        make_provider("openai-compatible", "m")
    server = fake_server("openai", [{"content": "hi"}])
    provider = make_provider("openai-compatible", "m", base_url=server.base_url, api_key="tok")
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.server == "generic"
    assert provider.complete(build_request()).content == "hi"
    assert server.requests[0].headers["authorization"] == "Bearer tok"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as error:
        make_provider("scripted", "m")
    assert str(error.value) == f"unknown provider 'scripted'; known: {', '.join(PROVIDER_NAMES)}"


def test_missing_key_surfaces_from_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic", "claude-x")


def test_a_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "contextengine.providers.anthropic", None)
    with pytest.raises(ConfigError, match=r"pip install 'contextengine\[anthropic\]'"):
        make_provider("anthropic", "claude-x", api_key="k")


@pytest.mark.parametrize("name", ["openai", "openai-chat", "anthropic", "vllm"])
def test_timeout_and_retries_reach_every_http_adapter(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    provider = make_provider(name, "m", timeout_s=7.5, max_retries=5)
    client = provider._client  # type: ignore[attr-defined]
    # The SDK's own retries are off: providers.retry does them.
    assert (client.timeout, client.max_retries, provider.max_retries) == (7.5, 0, 5)  # type: ignore[attr-defined]


GENERATION_FIELDS = {
    # provider, fake wire: the fields each API takes for max tokens, temperature, effort
    ("openai", "responses"): {
        "max_output_tokens": 50,
        "temperature": 0.5,
        "reasoning": {"effort": "high"},
    },
    ("openai-chat", "openai"): {
        "max_completion_tokens": 50,
        "temperature": 0.5,
        "reasoning_effort": "high",
    },
    ("vllm", "openai"): {"max_tokens": 50, "temperature": 0.5, "reasoning_effort": "high"},
    ("anthropic", "anthropic"): {
        "max_tokens": 50,
        "temperature": 0.5,
        "output_config": {"effort": "high"},
    },
}


@pytest.mark.parametrize(("name", "wire"), list(GENERATION_FIELDS))
def test_generation_settings_reach_every_http_adapter_in_its_own_shape(
    name: str, wire: str, build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server(wire, [{"content": "ok"}])
    generation = Generation(max_tokens=50, temperature=0.5, reasoning_effort="high")
    provider = make_provider(
        name, "m", base_url=server.base_url, api_key="k", generation=generation
    )
    provider.complete(build_request())
    body = server.requests[0].json()
    expected = GENERATION_FIELDS[(name, wire)]
    assert {k: body.get(k) for k in expected} == expected


def test_cli_timeout_and_retries_bound_a_stalled_call(
    fake_server: StartServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = fake_server("openai", [{"content": "never"}], stalls=5)
    args = ["run", "hi", "-p", "openai-compatible", "-m", "m", "--base-url", server.base_url]
    args += ["-w", str(tmp_path), "--timeout", "0.3", "--retries", "1"]
    monkeypatch.setattr(sys, "argv", ["contextengine", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 1
    assert "request timed out" in capsys.readouterr().out
    assert len(server.requests) == 2
