"""make_provider: names to adapters, defaults, and clear errors."""

from __future__ import annotations

import sys

import pytest

from contextengine import MissingAPIKeyError, ProviderError
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.factory import LOCAL_BASE_URLS, PROVIDER_NAMES, make_provider
from contextengine.providers.openai import OpenAIProvider
from contextengine.providers.openai_compatible import OpenAICompatibleProvider

from .conftest import BuildRequest, StartServer


def test_hosted_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-a")
    openai = make_provider("openai", "gpt-x")
    anthropic = make_provider("anthropic", "claude-x")
    assert isinstance(openai, OpenAIProvider)
    assert isinstance(anthropic, AnthropicProvider)
    assert (openai.model, anthropic.model) == ("gpt-x", "claude-x")


@pytest.mark.parametrize("name", ["vllm", "sglang", "llamacpp", "ollama"])
def test_self_hosted_servers_default_to_their_local_url(name: str) -> None:
    provider = make_provider(name, "m")
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.server == name
    assert provider.base_url == LOCAL_BASE_URLS[name]


def test_single_model_servers_need_no_model_name() -> None:
    assert make_provider("llamacpp").model == "default"
    assert make_provider("sglang").model == "default"
    with pytest.raises(ProviderError, match="provider 'vllm' needs a model name"):
        make_provider("vllm")


def test_openai_compatible_is_generic_and_needs_a_base_url(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    with pytest.raises(ProviderError, match="needs a base URL"):
        make_provider("openai-compatible", "m")
    server = fake_server("openai", [{"content": "hi"}])
    provider = make_provider("openai-compatible", "m", base_url=server.base_url, api_key="tok")
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.server == "generic"
    assert provider.complete(build_request()).content == "hi"
    assert server.requests[0].headers["authorization"] == "Bearer tok"


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ProviderError) as error:
        make_provider("scripted", "m")
    assert str(error.value) == f"unknown provider 'scripted'; known: {', '.join(PROVIDER_NAMES)}"


def test_missing_key_surfaces_from_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic", "claude-x")


def test_a_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "contextengine.providers.anthropic", None)
    with pytest.raises(ProviderError, match=r"pip install 'contextengine\[anthropic\]'"):
        make_provider("anthropic", "claude-x", api_key="k")
