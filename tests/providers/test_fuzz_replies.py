"""Fuzz ``Agent.run`` end to end with hostile replies and broken bodies from a local fake server.

Whatever the model or the server sends, ``Agent.run`` returns a ``RunResult`` or raises a
``ContextEngineError`` - nothing else - and the session log reads back afterwards. 1,000
cases in all by default; ``CONTEXTENGINE_STRESS=1`` runs ten times as many.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine import Agent, Config, RunResult, Session
from contextengine.errors import ContextEngineError
from contextengine.providers.anthropic import AnthropicProvider
from contextengine.providers.openai import OpenAIProvider
from contextengine.tools.file_search import FileGlob, FileGrep, FileLs
from contextengine.tools.files import FileEdit, FileRead, FileWrite
from contextengine.tools.registry import Toolset
from contextengine.tools.todo import TodoWrite

from .fake_servers import FakeModelServer, RawReply

STRESS = os.environ.get("CONTEXTENGINE_STRESS") == "1"
settings.register_profile(
    "fuzz",
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def fuzz_settings(ci_examples: int) -> settings:
    """The fuzz profile with ``ci_examples`` cases (ten times as many under stress)."""
    return settings(settings.get_profile("fuzz"), max_examples=ci_examples * (10 if STRESS else 1))


FINAL = {"content": "The task is complete: nothing more to do."}
FINISH = {"openai": b'"finish_reason": "', "anthropic": b"event: message_delta"}
# No shell: fuzzed arguments must not run commands on the test machine.
TOOLS = (FileRead, FileWrite, FileEdit, FileLs, FileGlob, FileGrep, TodoWrite)
TOOL_NAMES = [tool.name for tool in TOOLS]
ARGUMENT_NAMES = ["path", "content", "old", "new", "pattern", "todos", "offset", "limit", "glob"]

TRICKY_TEXT = [
    "\ud800",
    "\udfff",
    "\ud83d\ude00",
    "\x00",
    "\u2028",
    "\ufeff",
    "Action: file_read[",
    'Action: file_read[{"path": NaN}]',
    "Action: Finish[",
    "Final Answer: ",
    "[" * 3000,
    "]",
    '"',
    "\\",
    "NaN",
    "data: {not json}\n\n",
    "event: error\n",
    "x" * 30000,
    "../" * 40 + "etc/passwd",
    "/" + "a" * 300,
    "**/../**",
]
RAW_ARGUMENTS = [
    "",
    "{",
    "null",
    "[1, 2]",
    '"a string"',
    "NaN",
    '{"path": NaN}',
    '{"path": Infinity}',
    '{"path": -Infinity, "content": 1}',
    '{"path": 1e999}',
    '{"path": "\\ud800"}',
    '{"path": "a\\u0000b"}',
    '{"a": 1}{"b": 2}',
    '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "[" * 900 + "]" * 900,
    '{"todos": ' + '{"a":' * 150 + "1" + "}" * 150 + "}",
]

texts = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(TRICKY_TEXT)), max_size=4).map(
    "".join
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities included: the server writes them as bare NaN/Infinity
    texts,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
arguments = st.one_of(
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES) | texts, json_values, max_size=4),
    st.sampled_from(RAW_ARGUMENTS),
    texts,
)
tool_names = st.one_of(
    st.sampled_from([*TOOL_NAMES, "nope", "", "Finish", "\ud800", "x" * 300, "file_read\x00"]),
    st.text(max_size=20),
)
calls = st.fixed_dictionaries({"name": tool_names, "arguments": arguments})
replies = st.fixed_dictionaries(
    {"content": texts, "reasoning": texts, "tool_calls": st.lists(calls, max_size=2)}
)


class Harness:
    """One fake server per wire, shared by every example; each example queues its answers."""

    def __init__(self, wire: str) -> None:
        self.pending: deque[Any] = deque()
        self.server = FakeModelServer(wire, self._answer).start()
        common = {"api_key": "k", "base_url": self.server.base_url, "retry_backoff_s": 0}
        self.provider = (
            AnthropicProvider("claude-fuzz", max_retries=1, **common)
            if wire == "anthropic"
            else OpenAIProvider("gpt-fuzz", max_retries=1, **common)
        )
        # tmpfs where there is one: every append is fsynced, and disks make that the cost.
        shm = Path("/dev/shm")
        self.root = Path(
            tempfile.mkdtemp(prefix="contextengine-fuzz-", dir=shm if shm.is_dir() else None)
        )

    def _answer(self, body: dict[str, Any]) -> Any:
        return self.pending.popleft() if self.pending else FINAL

    def run(self, answers: list[Any], protocol: str = "native") -> RunResult | None:
        """Queue ``answers``, run one turn in a fresh workspace, check the log reads back;
        the turn's result, or ``None`` when it raised a ``ContextEngineError``."""
        self.pending = deque(answers)
        workspace = Path(tempfile.mkdtemp(dir=self.root))
        try:
            agent = Agent(
                self.provider,
                workspace,
                Config(max_steps=3),
                tools=Toolset([tool() for tool in TOOLS]),
                protocol=protocol,  # type: ignore[arg-type]
            )
            result = None
            with contextlib.suppress(ContextEngineError):
                result = agent.run("Fix the bug \ud800 in app.py")
            reread = Session.open(agent.session_dir)
            assert len(reread.records) == len(agent.session.records)
            for line in (agent.session_dir / "session.jsonl").read_bytes().splitlines():
                json.loads(line.decode("utf-8"))
            return result
        finally:
            shutil.rmtree(workspace, ignore_errors=True)

    def stop(self) -> None:
        """Stop the server and remove every workspace."""
        self.server.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module", params=["openai", "anthropic"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    """A running fake server of one wire format and its provider."""
    running = Harness(request.param)
    yield running
    running.stop()


@fuzz_settings(250)
@given(
    answers=st.lists(replies, min_size=1, max_size=3),
    protocol=st.sampled_from(["native", "text"]),
)
def test_fuzzed_replies_never_escape_agent_run(
    harness: Harness, answers: list[dict[str, Any]], protocol: str
) -> None:
    harness.run(answers, protocol)


def _break(stream: bytes, how: str, at: int, junk: bytes) -> RawReply:
    """``stream`` changed in one way (``at`` picks a byte offset, ``junk`` is inserted)."""
    cut = _cut(stream, at)
    if how == "truncate":
        return RawReply(stream[:cut])
    if how == "hang up":
        return RawReply(stream[:cut], cut=True)
    if how == "insert":
        return RawReply(stream[:cut] + junk + stream[cut:])
    if how == "replace data":
        lines = stream.split(b"\n")
        data = [i for i, line in enumerate(lines) if line.startswith(b"data: ")]
        lines[data[at % len(data)]] = b"data: " + junk
        return RawReply(b"\n".join(lines))
    if how == "html":
        return RawReply(b"<!doctype html><title>502</title>" + junk, content_type="text/html")
    if how == "plain json":
        return RawReply(
            b'{"object": "chat.completion", "usage": {}}', content_type="application/json"
        )
    if how == "status":
        return RawReply(junk, status=500 + at % 100, content_type="text/plain")
    return RawReply(junk)


junk_bytes = st.one_of(
    st.binary(max_size=60),
    st.sampled_from(
        [
            b"{not json}",
            b"data: {not json}\n\n",
            b"event: error\ndata: {}\n\n",
            b"data: [DONE]\n\n",
            b"data: " + b"[" * 100_000 + b"\n\n",
            b'data: {"choices": 5}\n\n',
            b'data: {"type": "content_block_delta", "index": 9}\n\n',
            b'data: "\\ud800"\n\n',
            b"\xff\xfe\x00",
        ]
    ),
)


@fuzz_settings(250)
@given(
    reply=replies,
    how=st.sampled_from(
        ["truncate", "hang up", "insert", "replace data", "html", "plain json", "status", "raw"]
    ),
    at=st.integers(min_value=0, max_value=10**6),
    junk=junk_bytes,
    recover=st.booleans(),
)
def test_broken_bodies_never_escape_agent_run(
    harness: Harness, reply: dict[str, Any], how: str, at: int, junk: bytes, recover: bool
) -> None:
    stream = harness.server.stream_bytes(reply)
    changed = _break(stream, how, at, junk)
    # Every attempt broken (the run ends with a provider error), or the one retry succeeds.
    result = harness.run([changed, FINAL] if recover else [changed, changed])
    certainly_broken = how in ("hang up", "html", "plain json", "raw") or (
        how == "truncate" and _cut(stream, at) < stream.index(FINISH[harness.server.wire])
    )
    if certainly_broken:
        assert result is not None
        if recover:
            assert (result.status, result.final_answer) == ("completed", FINAL["content"])
        else:
            assert result.status == "error" and result.final_answer == ""
    if how == "status":
        assert result is not None and result.status == "error"


def _cut(stream: bytes, at: int) -> int:
    return at % max(len(stream), 1)
