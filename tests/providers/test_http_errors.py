"""HTTP failures map to one ProviderError subclass with ``status`` and ``retryable``, the same
for every HTTP adapter, and only retryable failures are tried again."""

from __future__ import annotations

from typing import Any

import pytest

from contextengine.errors import (
    AuthError,
    BadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.http_errors import retry_after, status_error
from contextengine.providers.openai import OpenAIProvider
from contextengine.providers.openai_compatible import OpenAICompatibleProvider

from .conftest import BuildRequest, StartServer
from .fake_servers import FakeModelServer

ADAPTERS = ["openai", "anthropic", "vllm"]

MAPPING: dict[int, tuple[type[ProviderError], bool]] = {
    400: (BadRequestError, False),
    401: (AuthError, False),
    403: (AuthError, False),
    404: (BadRequestError, False),
    408: (ProviderTimeoutError, True),
    409: (BadRequestError, True),
    422: (BadRequestError, False),
    429: (RateLimitError, True),
    500: (ServerError, True),
    502: (ServerError, True),
    503: (ServerError, True),
    529: (ServerError, True),
}


def start(fake_server: StartServer, adapter: str, **kwargs: Any) -> FakeModelServer:
    """A fake server speaking ``adapter``'s wire format."""
    return fake_server("anthropic" if adapter == "anthropic" else "openai", **kwargs)


def provider(adapter: str, base_url: str, **kwargs: Any) -> Any:
    """The ``adapter`` against ``base_url``, retrying without waiting unless told."""
    kwargs.setdefault("retry_backoff_s", 0)
    if adapter == "anthropic":
        return AnthropicProvider("claude-test", api_key="k", base_url=base_url, **kwargs)
    if adapter == "openai":
        return OpenAIProvider("gpt-test", api_key="k", base_url=base_url, **kwargs)
    return OpenAICompatibleProvider("m", base_url, server=adapter, **kwargs)


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("status", sorted(MAPPING))
def test_each_status_is_one_error_class_with_status_and_retryable(
    build_request: BuildRequest, fake_server: StartServer, adapter: str, status: int
) -> None:
    server = start(fake_server, adapter, script=[{"content": "never"}], failures=[status])
    with pytest.raises(ProviderError) as raised:
        provider(adapter, server.base_url, max_retries=0).complete(build_request())
    expected_class, retryable = MAPPING[status]
    assert type(raised.value) is expected_class
    assert (raised.value.status, raised.value.retryable) == (status, retryable)
    assert f"HTTP {status}: " in str(raised.value)
    assert len(server.requests) == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("status", [429, 500, 503, 529])
def test_a_retryable_failure_is_tried_again_then_answers(
    build_request: BuildRequest, fake_server: StartServer, adapter: str, status: int
) -> None:
    server = start(
        fake_server, adapter, script=[{"content": "after retries"}], failures=[status] * 2
    )
    reply = provider(adapter, server.base_url, max_retries=2).complete(build_request())
    assert reply.content == "after retries"
    assert len(server.requests) == 3


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_retryable_failure_that_persists_keeps_its_class_after_the_last_attempt(
    build_request: BuildRequest, fake_server: StartServer, adapter: str
) -> None:
    server = start(fake_server, adapter, script=[{"content": "never"}], failures=[429] * 5)
    with pytest.raises(RateLimitError, match=r"HTTP 429: .*\(after 3 attempts\)$") as raised:
        provider(adapter, server.base_url, max_retries=2).complete(build_request())
    assert (raised.value.status, raised.value.retryable) == (429, True)
    assert len(server.requests) == 3


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_non_retryable_failure_is_never_tried_again(
    build_request: BuildRequest, fake_server: StartServer, adapter: str, status: int
) -> None:
    server = start(fake_server, adapter, script=[{"content": "never"}], failures=[status] * 3)
    with pytest.raises(MAPPING[status][0]):
        provider(adapter, server.base_url, max_retries=2).complete(build_request())
    assert len(server.requests) == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_the_servers_should_retry_false_wins_over_the_status(
    build_request: BuildRequest, fake_server: StartServer, adapter: str
) -> None:
    # An exhausted script is a 500 sent with ``x-should-retry: false``.
    server = start(fake_server, adapter, script=[])
    with pytest.raises(ServerError) as raised:
        provider(adapter, server.base_url, max_retries=2).complete(build_request())
    assert (raised.value.status, raised.value.retryable) == (500, False)
    assert len(server.requests) == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_unreachable_server_is_a_retryable_connection_error(
    build_request: BuildRequest, fake_server: StartServer, adapter: str
) -> None:
    server = start(fake_server, adapter, script=[])
    base_url = server.base_url
    server.stop()
    with pytest.raises(ProviderConnectionError, match="cannot connect") as raised:
        provider(adapter, base_url, max_retries=0).complete(build_request())
    assert (raised.value.status, raised.value.retryable) == (None, True)


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_stalled_call_is_a_retryable_timeout_and_is_tried_again(
    build_request: BuildRequest, fake_server: StartServer, adapter: str
) -> None:
    server = start(fake_server, adapter, script=[{"content": "never"}], stalls=3)
    with pytest.raises(ProviderTimeoutError, match="request timed out") as raised:
        provider(adapter, server.base_url, timeout=0.3, max_retries=1).complete(build_request())
    assert raised.value.retryable
    assert len(server.requests) == 2


def test_headers_set_the_wait_and_the_retry_decision() -> None:
    assert retry_after({"retry-after-ms": "250"}) == 0.25
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None
    error = status_error("x", 400, "busy", {"X-Should-Retry": "true", "Retry-After": "2"})
    assert (type(error), error.retryable, error.retry_after_s) == (BadRequestError, True, 2.0)
    assert str(error) == "x: HTTP 400: busy"
