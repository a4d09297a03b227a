"""A 200 reply that is not a complete event stream is a retried provider error, never an answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from contextengine.errors import ProviderError
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.openai import OpenAIProvider
from contextengine.providers.openai_compatible import OpenAICompatibleProvider

from .conftest import BuildRequest, StartServer
from .fake_servers import FakeModelServer, RawReply

REPLY = {"content": "the complete answer", "tool_calls": [{"name": "file_read", "arguments": {}}]}
FINISH = {"openai": b'"finish_reason": "tool_calls"', "anthropic": b"event: message_delta"}


def adapter(server: FakeModelServer, retries: int) -> Any:
    """The wire's adapter against ``server``, retrying without waiting."""
    if server.wire == "anthropic":
        return AnthropicProvider(
            "claude-test",
            api_key="k",
            base_url=server.base_url,
            max_retries=retries,
            retry_backoff_s=0,
        )
    return OpenAIProvider(
        "gpt-test", api_key="k", base_url=server.base_url, max_retries=retries, retry_backoff_s=0
    )


def cut_before_finish(server: FakeModelServer) -> RawReply:
    stream = server.stream_bytes(REPLY)
    return RawReply(stream[: stream.index(FINISH[server.wire])])


def not_json_event(server: FakeModelServer) -> RawReply:
    stream = server.stream_bytes(REPLY)
    first = stream.index(b"data: ") + len(b"data: ")
    return RawReply(stream[:first] + b"{not json}\n\n" + stream[first:])


def hung_up(server: FakeModelServer) -> RawReply:
    stream = server.stream_bytes(REPLY)
    return RawReply(stream[: len(stream) // 2], cut=True)


BROKEN: dict[str, Callable[[FakeModelServer], RawReply]] = {
    "cut before finish": cut_before_finish,
    "not-JSON data line": not_json_event,
    "connection cut": hung_up,
    "HTML page": lambda s: RawReply(
        b"<html><body>Bad gateway</body></html>", content_type="text/html"
    ),
    "plain JSON": lambda s: RawReply(
        b'{"id": "x", "object": "chat.completion"}', content_type="application/json"
    ),
    "empty body": lambda s: RawReply(b""),
    "a text field that is a number": lambda s: RawReply(
        s.stream_bytes(REPLY).replace(b'"the com"', b"5", 1)
    ),
}


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_broken_reply_is_retried_then_one_provider_error(
    build_request: BuildRequest, fake_server: StartServer, wire: str, kind: str
) -> None:
    server = fake_server(wire, lambda body: BROKEN[kind](server))
    with pytest.raises(
        ProviderError, match=r"(broken reply stream|ended before).*after 3 attempts"
    ):
        adapter(server, retries=2).complete(build_request())
    assert len(server.requests) == 3


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_good_reply_after_a_broken_one_is_the_answer(
    build_request: BuildRequest, fake_server: StartServer, wire: str
) -> None:
    replies = iter([cut_before_finish, lambda s: REPLY])
    server = fake_server(wire, lambda body: next(replies)(server))
    reply = adapter(server, retries=1).complete(build_request())
    assert reply.content == "the complete answer"
    assert [c.name for c in reply.tool_calls] == ["file_read"]
    assert len(server.requests) == 2


def test_self_hosted_servers_retry_broken_replies_too(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("openai", lambda body: RawReply(b""))
    provider = OpenAICompatibleProvider(
        "m", server.base_url, server="vllm", max_retries=1, retry_backoff_s=0
    )
    with pytest.raises(ProviderError, match=r"^vllm m: the reply stream ended before its"):
        provider.complete(build_request())
    assert len(server.requests) == 2
