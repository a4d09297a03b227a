"""LangChain v1 ``create_agent`` with ``ContextEngineMiddleware`` against a local server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from contextengine.integrations.langchain import ContextEngineMiddleware
from contextengine.integrations.mirror import ContextMirror
from integrations.scenario import BIG_LOG, FINAL, SCRIPT, check_bodies, echo, read_log, todo
from support.chat_server import chat_server


@pytest.mark.parametrize("call", ["invoke", "ainvoke"])
def test_requests_extend_externalize_and_carry_the_session_key(tmp_path: Path, call: str) -> None:
    mirror = ContextMirror(tmp_path / "sessions")
    task = {"messages": [{"role": "user", "content": "Check the log."}]}
    with chat_server(SCRIPT) as server:
        model = ChatOpenAI(model="fake", base_url=server.base_url, api_key="k", max_retries=0)
        agent = create_agent(
            model,
            tools=[tool(f) for f in (todo, read_log, echo, mirror.file_read)],
            system_prompt="Be brief.",
            middleware=[ContextEngineMiddleware(mirror)],
        )
        state = agent.invoke(task) if call == "invoke" else asyncio.run(agent.ainvoke(task))
    assert state["messages"][-1].text == FINAL
    check_bodies(server.bodies, mirror)
    assert BIG_LOG in [m.content for m in state["messages"]]  # only the requests changed
