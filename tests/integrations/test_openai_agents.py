"""The OpenAI Agents SDK with ``ContextEngineFilter`` against a local Chat Completions server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from contextengine.integrations.mirror import ContextMirror
from contextengine.integrations.openai_agents import run_config
from integrations.scenario import BIG_LOG, FINAL, SCRIPT, check_bodies, echo, read_log, todo
from support.chat_server import chat_server


def test_requests_extend_externalize_and_carry_the_session_key(tmp_path: Path) -> None:
    set_tracing_disabled(True)
    mirror = ContextMirror(tmp_path / "sessions")
    with chat_server(SCRIPT) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        agent = Agent(
            name="checker",
            instructions="Be brief.",
            model=OpenAIChatCompletionsModel(model="fake", openai_client=client),
            tools=[function_tool(f) for f in (todo, read_log, echo, mirror.file_read)],
        )
        result = Runner.run_sync(agent, "Check the log.", run_config=run_config(mirror))
    assert result.final_output == FINAL
    check_bodies(server.bodies, mirror)
    outputs = [i.get("output") for i in result.to_input_list() if isinstance(i, dict)]
    assert BIG_LOG in outputs  # only the requests changed
