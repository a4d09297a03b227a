"""Provider by name, for the CLI and the server (the scripted provider is built in code).

``PROVIDERS`` is the registry: one row per name, saying which function makes the provider
from a ``ProviderSettings``, which pip extra its SDK comes with, and its defaults. Adding a
provider is its module (with a ``from_settings`` function) and one row here. The row's
module is imported only when its provider is asked for, so a missing extra is a clear
error for that provider alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from contextengine.errors import ConfigError
from contextengine.local.default_model import required_gguf
from contextengine.providers.base import Provider
from contextengine.providers.wire import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    Generation,
    ProviderSettings,
)


@dataclass(frozen=True)
class ProviderRow:
    """One registered provider: ``factory`` is ``"module:function"``, a function taking a
    ``ProviderSettings``; ``extra`` the pip extra it needs; ``base_url`` the server's usual
    URL; ``default_model`` the model when none is named (a server that serves one)."""

    factory: str
    extra: str
    base_url: str | None = None
    default_model: Callable[[], str] | None = None

    def make(self, settings: ProviderSettings) -> Provider:
        """The provider of ``settings``, or a clear error naming the missing extra."""
        module, function = self.factory.split(":")
        try:
            make: Callable[[ProviderSettings], Provider] = getattr(
                importlib.import_module(module), function
            )
        except ImportError as exc:
            raise ConfigError(
                f"this provider needs the {self.extra} package: "
                f"pip install 'contextengine[{self.extra}]'"
            ) from exc
        return make(settings)


def _served_model() -> str:
    # these servers serve one model and ignore the name in the request
    return "default"


def _local_model() -> str:
    return str(required_gguf())


_COMPATIBLE = "contextengine.providers.openai_compatible:from_settings"

PROVIDERS: dict[str, ProviderRow] = {
    "openai": ProviderRow("contextengine.providers.openai_responses:from_settings", "openai"),
    "openai-chat": ProviderRow("contextengine.providers.openai:from_settings", "openai"),
    "anthropic": ProviderRow("contextengine.providers.anthropic:from_settings", "anthropic"),
    "vllm": ProviderRow(_COMPATIBLE, "openai", "http://localhost:8000/v1"),
    "sglang": ProviderRow(_COMPATIBLE, "openai", "http://localhost:30000/v1", _served_model),
    "llamacpp": ProviderRow(_COMPATIBLE, "openai", "http://localhost:8080/v1", _served_model),
    "ollama": ProviderRow(_COMPATIBLE, "openai", "http://localhost:11434/v1"),
    "openai-compatible": ProviderRow(_COMPATIBLE, "openai"),
    "local": ProviderRow(
        "contextengine.providers.local:from_settings", "local", None, _local_model
    ),
}
"""The provider registry: name -> how to make it."""

PROVIDER_NAMES: tuple[str, ...] = tuple(PROVIDERS)
"""The names ``make_provider`` and ``contextengine run -p`` accept."""

LOCAL_BASE_URLS: dict[str, str] = {
    name: row.base_url for name, row in PROVIDERS.items() if row.base_url is not None
}
"""The self-hosted servers' usual URLs."""


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
    """The provider called ``name`` (a row of ``PROVIDERS``) for ``model``.

    ``openai`` talks to the Responses API, ``openai-chat`` to Chat Completions. Self-hosted
    servers default to their usual local URL; ``openai-compatible`` needs ``base_url``. Keys
    fall back to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``. ``local`` runs a GGUF file
    in-process: ``model`` is its path (default: the Gemma package's, ``local.default_model``).
    HTTP providers wait ``timeout_s`` for bytes and retry a failed or broken call
    ``max_retries`` times. ``generation`` goes to every provider;
    ``prompt_cache_retention`` to OpenAI's, ``cache_ttl`` (``5m`` / ``1h``) to Anthropic's.
    """
    row = PROVIDERS.get(name)
    if row is None:
        raise ConfigError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}")
    if base_url is not None:
        check_base_url(base_url)
    model = model or (row.default_model() if row.default_model is not None else None)
    if not model:
        raise ConfigError(f"provider {name!r} needs a model name")
    settings = ProviderSettings(
        name,
        model,
        base_url or row.base_url,
        api_key,
        timeout_s,
        max_retries,
        context_window,
        generation or Generation(),
        prompt_cache_retention,
        cache_ttl,
    )
    return row.make(settings)


def check_base_url(url: str) -> None:
    """Refuse a base URL that is not ``http(s)://host[:port][/path]``, naming it."""
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(f"base URL {url!r} is not an http:// or https:// URL with a host")
