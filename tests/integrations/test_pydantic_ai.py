"""pydantic-ai with the ``ContextEngine`` capability against a local Chat Completions server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from contextengine.integrations.mirror import ContextMirror
from contextengine.integrations.pydantic_ai import ContextEngine, model_settings
from integrations.scenario import BIG_LOG, FINAL, SCRIPT, check_bodies, echo, read_log, todo
from support.chat_server import chat_server


def _agent(base_url: str, mirror: ContextMirror, instructions: str | None = None) -> Agent:
    """The scenario's agent with the capability, against the server at ``base_url``."""
    model = OpenAIChatModel("fake", provider=OpenAIProvider(base_url=base_url, api_key="k"))
    return Agent(
        model,
        instructions=instructions,
        tools=[todo, read_log, echo, mirror.file_read],
        capabilities=[ContextEngine(mirror)],
    )


def test_requests_extend_externalize_and_carry_the_session_key(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path / "sessions")
    with chat_server(SCRIPT) as server:
        result = _agent(server.base_url, mirror, "Be brief.").run_sync("Check the log.")
    assert result.output == FINAL
    check_bodies(server.bodies, mirror)
    assert server.bodies[0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_run_history_keeps_what_pydantic_ai_recorded(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path / "sessions")
    with chat_server(SCRIPT) as server:
        result = _agent(server.base_url, mirror).run_sync("Check the log.")
    returned = [
        p.content for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart)
    ]
    assert BIG_LOG in returned  # only the requests changed


def test_model_settings_carry_the_session_key(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path / "sessions", session_key="team-42")
    assert model_settings(mirror) == {"openai_prompt_cache_key": "team-42"}
