"""Anthropic cache diagnostics: asked for in the bodies sent to a real local server, parsed
from its replies into ``Usage.cache_diagnosis``, recorded in ``usage.jsonl``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config, Usage
from contextengine.agent.loop import Agent
from contextengine.measure.report import load_usage, usage_report
from contextengine.providers.anthropic import CACHE_DIAGNOSIS_BETA, AnthropicProvider
from contextengine.types import CacheDiagnosis

from .conftest import BuildRequest, StartServer

STEPS = [
    {"tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "x\n"}}]},
    {"content": "Checking.", "tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]},
    {"content": "Done: a.txt holds x."},
]


def provider(base_url: str, **kwargs: Any) -> AnthropicProvider:
    return AnthropicProvider("claude-test", api_key="sk-ant-test", base_url=base_url, **kwargs)


def test_each_main_request_names_the_previous_main_reply(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", lambda body: {"content": "ok"}, diagnostics=True)
    adapter = provider(server.base_url, cache_diagnostics=True)
    main = build_request()
    side = dataclasses.replace(main, purpose="summary")
    for request in (main, main, side, main):
        adapter.complete(request)
    named = [r.json()["diagnostics"]["previous_message_id"] for r in server.requests]
    # The side call opts in without being compared and is never compared with.
    assert named == [None, "msg_0", None, "msg_1"]
    assert {r.headers["anthropic-beta"] for r in server.requests} == {CACHE_DIAGNOSIS_BETA}


def test_the_servers_diagnoses_become_the_replys_usage(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", lambda body: {"content": "ok"}, diagnostics=True)
    adapter = provider(server.base_url, cache_diagnostics=True)
    request = build_request()
    fewer_tools = dataclasses.replace(request, _tools=request._tools[:2])
    first, same, changed = (adapter.complete(r) for r in (request, request, fewer_tools))
    assert first.usage.cache_diagnosis is None  # nothing to compare with yet
    assert same.usage.cache_diagnosis == CacheDiagnosis("none")
    diagnosis = changed.usage.cache_diagnosis
    assert diagnosis is not None and diagnosis.reason == "tools_changed"
    assert diagnosis.missed_input_tokens > 0


def test_a_server_without_diagnostics_gives_none(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", lambda body: {"content": "ok"})
    adapter = provider(server.base_url, cache_diagnostics=True)
    replies = [adapter.complete(build_request()) for _ in range(2)]
    assert server.requests[1].json()["diagnostics"] == {"previous_message_id": "msg_0"}
    assert [r.usage.cache_diagnosis for r in replies] == [None, None]


def test_diagnostics_are_asked_of_anthropics_api_only_by_default(
    build_request: BuildRequest, fake_server: StartServer
) -> None:
    assert AnthropicProvider("claude-test", api_key="k").cache_diagnostics is True
    server = fake_server("anthropic", [{"content": "ok"}], diagnostics=True)
    adapter = provider(server.base_url)
    assert adapter.cache_diagnostics is False
    adapter.complete(build_request())
    assert "diagnostics" not in server.requests[0].json()
    assert "anthropic-beta" not in server.requests[0].headers


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        (None, CacheDiagnosis("none")),
        ({"cache_miss_reason": None}, CacheDiagnosis("pending")),
        (
            {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 812}},
            CacheDiagnosis("messages_changed", 812),
        ),
        ({"cache_miss_reason": {"type": "unavailable"}}, CacheDiagnosis("unavailable")),
        (
            {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": "9"}},
            CacheDiagnosis("system_changed"),
        ),
        ({"cache_miss_reason": {"cache_missed_input_tokens": 3}}, CacheDiagnosis("unknown", 3)),
        ("garbage", None),
    ],
)
def test_wire_diagnostics_are_normalized_with_the_usage(
    wire: object, expected: CacheDiagnosis | None
) -> None:
    counters = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 1}
    usage = Usage.from_wire({**counters, "diagnostics": wire}, model="claude-test")
    assert usage is not None and usage.input_tokens == 100 and usage.cached_tokens == 90
    assert usage.cache_diagnosis == expected
    assert Usage.from_wire(counters) == Usage(100, 90, 0, 1)


def test_a_run_records_the_providers_verdict_beside_the_monitors(
    tmp_path: Path, fake_server: StartServer
) -> None:
    server = fake_server("anthropic", STEPS, diagnostics=True)
    # the tail from the first step on (no overhead allowance to wait for)
    config = Config(overhead_share=None)
    agent = Agent(provider(server.base_url, cache_diagnostics=True), tmp_path / "ws", config)
    result = agent.run("Create a.txt holding x, then check it.")
    assert result.status == "completed"
    lines = [json.loads(line) for line in (result.session_dir / "usage.jsonl").read_text().split()]
    assert len(lines) == 3
    assert "cache_diagnosis" not in lines[0]
    # Each step replaces the previous request's task-status tail: the messages diverge there,
    # past the persisted prefix, which the monitor calls stable too.
    for line in lines[1:]:
        assert line["cache_diagnosis"]["reason"] == "messages_changed"
        assert line["cache_diagnosis"]["missed_input_tokens"] > 0
        assert "break" not in line["prefix"]
    report = usage_report(result.session_dir, load_usage(result.session_dir))
    assert report.cache_diagnosed_calls == 2
    assert report.cache_disagreements == ()
