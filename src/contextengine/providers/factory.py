"""Provider by name, for the CLI and the server (the scripted provider is built in code).

SDKs are imported only when their provider is asked for, so a missing extra is a clear
error for that provider alone.
"""

from __future__ import annotations

import importlib
from typing import Any
from urllib.parse import urlsplit

from contextengine.errors import ConfigError
from contextengine.local.default_model import required_gguf
from contextengine.providers.base import Provider
from contextengine.providers.wire import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_S, Generation

PROVIDER_NAMES: tuple[str, ...] = (
    "openai",
    "openai-chat",
    "anthropic",
    "vllm",
    "sglang",
    "llamacpp",
    "ollama",
    "openai-compatible",
    "local",
)
"""The names ``make_provider`` and ``contextengine run -p`` accept."""

LOCAL_BASE_URLS: dict[str, str] = {
    "vllm": "http://localhost:8000/v1",
    "sglang": "http://localhost:30000/v1",
    "llamacpp": "http://localhost:8080/v1",
    "ollama": "http://localhost:11434/v1",
}

# These servers serve one model and ignore the name in the request.
_DEFAULT_MODELS: dict[str, str] = {"sglang": "default", "llamacpp": "default"}


def make_provider(
    name: str,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
    context_window: int | None = None,
    generation: Generation | None = None,
    prompt_cache_retention: str | None = None,
    cache_ttl: str = "5m",
) -> Provider:
    """The provider called ``name`` (one of ``PROVIDER_NAMES``) for ``model``.

    ``openai`` talks to the Responses API, ``openai-chat`` to Chat Completions. Self-hosted
    servers default to their usual local URL; ``openai-compatible`` needs ``base_url``. Keys
    fall back to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``. ``local`` runs a GGUF file
    in-process: ``model`` is its path (default: the Gemma package's, ``local.default_model``).
    HTTP providers wait ``timeout_s`` for bytes and retry a failed or broken call
    ``max_retries`` times. ``generation`` goes to every provider;
    ``prompt_cache_retention`` to OpenAI's, ``cache_ttl`` (``5m`` / ``1h``) to Anthropic's.
    """
    http: dict[str, Any] = {"timeout": timeout_s, "max_retries": max_retries}
    generation = generation or Generation()
    if name not in PROVIDER_NAMES:
        raise ConfigError(f"unknown provider {name!r}; known: {', '.join(PROVIDER_NAMES)}")
    if base_url is not None:
        check_base_url(base_url)
    if name == "local" and not model:
        model = str(required_gguf())
    model = model or _DEFAULT_MODELS.get(name)
    if not model:
        raise ConfigError(f"provider {name!r} needs a model name")
    if name == "openai":
        return _adapter("openai_responses", "OpenAIResponsesProvider", "openai")(
            model,
            api_key=api_key,
            base_url=base_url,
            generation=generation,
            prompt_cache_retention=prompt_cache_retention,
            **http,
        )
    if name == "openai-chat":
        retention = {"prompt_cache_retention": prompt_cache_retention}
        return _adapter("openai", "OpenAIProvider", "openai")(
            model,
            api_key=api_key,
            base_url=base_url,
            generation=generation,
            **http,
            **(retention if prompt_cache_retention else {}),
        )
    if name == "local":
        local = _adapter("local", "LlamaCppProvider", "local")
        n_ctx = None
        if context_window is not None:
            n_ctx = importlib.import_module("contextengine.providers.local").local_n_ctx(
                model, context_window
            )
        return local(model, n_ctx=n_ctx, **_local_generation(generation))
    if name == "anthropic":
        return _adapter("anthropic", "AnthropicProvider", "anthropic")(
            model,
            api_key=api_key,
            base_url=base_url,
            generation=generation,
            cache_ttl=cache_ttl,
            **http,
        )
    if name == "openai-compatible" and base_url is None:
        raise ConfigError("provider 'openai-compatible' needs a base URL (--base-url)")
    return _adapter("openai_compatible", "OpenAICompatibleProvider", "openai")(
        model,
        base_url or LOCAL_BASE_URLS[name],
        api_key=api_key or "EMPTY",
        server="generic" if name == "openai-compatible" else name,
        generation=generation,
        **http,
    )


def check_base_url(url: str) -> None:
    """Refuse a base URL that is not ``http(s)://host[:port][/path]``, naming it."""
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(f"base URL {url!r} is not an http:// or https:// URL with a host")


def _local_generation(generation: Generation) -> dict[str, Any]:
    """The settings the in-process engine takes (it has no reasoning effort)."""
    fields: dict[str, Any] = {}
    if generation.max_tokens is not None:
        fields["max_tokens"] = generation.max_tokens
    if generation.temperature is not None:
        fields["temperature"] = generation.temperature
    return fields


def _adapter(module: str, cls: str, extra: str) -> Any:
    """The adapter class, or a clear error naming the missing SDK extra."""
    try:
        return getattr(importlib.import_module(f"contextengine.providers.{module}"), cls)
    except ImportError as exc:
        raise ConfigError(
            f"this provider needs the {extra} package: pip install 'contextengine[{extra}]'"
        ) from exc
