"""An agent is assembled from parts: the default factory, a swapped part, and its lifecycle."""

from dataclasses import replace
from pathlib import Path

import pytest

from contextengine import Agent, AgentParts, Config, ContextBuilder, ScriptedProvider
from contextengine.agent.parts import AgentRecipe
from contextengine.config import COMPONENT_FLAGS
from contextengine.session.layout import DEFAULT_ROOT_NAME
from contextengine.tools.registry import Toolset
from contextengine.tools.shell import ShellExec

ANSWER = {"content": "A complete answer, without any tool."}


def test_a_swapped_builder_is_the_one_requests_come_from(tmp_path: Path) -> None:
    provider = ScriptedProvider([ANSWER])
    parts = AgentParts.defaults(provider, tmp_path, Config())
    builder = ContextBuilder(system_prompt="Only this.", project_root=parts.workspace)
    with Agent.from_parts(replace(parts, builder=builder)) as agent:
        assert agent.run("hi").status == "completed"
    (request,) = provider.requests
    assert request.messages[0]["content"].startswith("Only this.")
    assert request.tools == []


def test_the_pruner_prices_the_cache_as_the_providers_model_does(tmp_path: Path) -> None:
    deepseek = AgentParts.defaults(
        ScriptedProvider([ANSWER], "deepseek/deepseek-chat"), tmp_path, Config()
    )
    cache = deepseek.pruner.cache
    assert (cache.read_price, cache.write_price) == pytest.approx((0.07 / 0.27, 1.0))
    local = AgentParts.defaults(ScriptedProvider([ANSWER]), tmp_path / "local", Config())
    cache = local.pruner.cache
    assert (cache.read_price, cache.write_price) == (0.1, 1.25), "unknown: Anthropic's"


def test_a_recipe_names_the_settings_in_force() -> None:
    plain = AgentRecipe.plain_chat()
    assert plain.history_mode == "full" and plain.context_window == Config().context_window
    assert list(plain.flags) == list(COMPONENT_FLAGS) and not any(plain.flags.values())
    small = AgentRecipe(Config(context_window=9000, history_mode="compressed", scrub=False))
    assert (small.context_window, small.history_mode) == (9000, "compressed")
    assert not small.flags["scrub"] and small.flags["diversity"]


def test_a_recipe_loads_a_file_with_the_flags_over_it(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("keep_rounds = 4\ndiversity = false\n")
    recipe = AgentRecipe.load(path, "diversity=on", context_window=8000, history_mode=None)
    assert recipe.config.keep_rounds == 4 and recipe.flags["diversity"]
    assert recipe.context_window == 8000 and recipe.config.history_mode == Config().history_mode


def test_a_recipe_makes_a_scratch_session_parts_and_a_verbatim_builder(tmp_path: Path) -> None:
    recipe = AgentRecipe(Config(max_steps=5, org="acme", team="core", diversity=False))
    workspace = tmp_path / "ws"
    session = recipe.scratch_session(workspace, "s1", "text")
    expected = workspace / DEFAULT_ROOT_NAME / "acme" / "core" / "ws" / "s1"
    assert session.directory == expected and session.id == "s1"
    assert session.style.protocol == "text" and not session.style.diversity
    tools = Toolset([ShellExec()])
    provider = ScriptedProvider([ANSWER])
    few = recipe.parts(provider, workspace, session=session, tools=tools, min_steps=3)
    assert few.config.max_steps == 5 and few.session is session, "the config's steps suffice"
    many = recipe.parts(provider, workspace, session=session, tools=tools, min_steps=40)
    assert many.config.max_steps == 40
    builder = recipe.builder("Recorded prompt.", tools.specs(), few.workspace)
    request = builder.build(session)
    assert request.messages[0]["content"] == "Recorded prompt.", "no text-protocol wrapping"
    assert tuple(t["function"]["name"] for t in request.tools) == tools.names


def test_with_closes_the_log_and_the_session_resumes(tmp_path: Path) -> None:
    with Agent(ScriptedProvider([ANSWER]), tmp_path, Config()) as agent:
        agent.run("first")
        assert _open_logs(agent.session.layout.log) == 1
    assert _open_logs(agent.session.layout.log) == 0, "the log is still open after the block"
    with Agent.resume(agent.session_dir, ScriptedProvider([ANSWER]), Config()) as again:
        assert again.run("second").status == "completed"
        assert len(again.session.records) > len(agent.session.records)


def test_close_releases_the_log_file_descriptor(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([ANSWER]), tmp_path, Config())
    agent.run("hi")
    before = _open_logs(agent.session.layout.log)
    agent.close()
    assert before == 1 and _open_logs(agent.session.layout.log) == 0


def _open_logs(log: Path) -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _target(fd) == str(log))


def _target(fd: Path) -> str:
    try:
        return str(fd.readlink())
    except OSError:
        return ""


def test_the_default_system_prompt_names_only_the_tools_and_components_the_session_has(
    tmp_path: Path,
) -> None:
    def system_prompt(config: Config, **kwargs: object) -> str:
        provider = ScriptedProvider([ANSWER])
        with Agent(provider, tmp_path / str(len(list(tmp_path.iterdir()))), config, **kwargs) as a:
            a.run("hi")
        return provider.requests[0].messages[0]["content"]

    full = system_prompt(Config())
    assert "todo_write" in full and "memory files" in full, "the tail names them and where"
    assert "large output" not in full, "a saved output's observation says where it is"
    assert "task_plan.md" in system_prompt(Config(recitation=False)), "no tail to name them"
    lean = system_prompt(Config(working_memory=False))
    assert "todo_write" in lean and "memory files" not in lean
    without_plan_tool = system_prompt(Config(), tools=Toolset([ShellExec()]))
    assert "todo_write" not in without_plan_tool and "memory files" in without_plan_tool
