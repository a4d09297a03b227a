"""Replay accepts any trajectory of the documented shape: every recorded step is played,
and the only cache breaks are the ones the engine means (pruning, compaction)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine.agent.parts import AgentRecipe
from contextengine.config import Config
from contextengine.measure.replay import replay
from contextengine.measure.trajectory import parse_trajectory

TOOL_NAMES = ("bash", "Read", "TodoWrite", "str_replace_editor", "finish", "file_read")
WORDS = st.sampled_from(
    [
        "alpha",
        "src/foo.py",
        "Foo.bar_baz",
        "Traceback",
        "exit",
        "ünï",
        "日本",
        "{}",
        '"',
        "\\",
        "\n",
    ]
)


def text(max_words: int) -> st.SearchStrategy[str]:
    """Words joined by spaces: paths, code names, quotes, escapes and newlines."""
    return st.lists(WORDS, max_size=max_words).map(" ".join)


ARGUMENTS = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"command": text(6)}),
    st.fixed_dictionaries({"path": st.sampled_from(["a.py", "../../etc/passwd", "/abs"])}),
    st.fixed_dictionaries(
        {
            "todos": st.lists(
                st.fixed_dictionaries(
                    {"content": text(3), "status": st.sampled_from(["pending", "completed", "?"])}
                ),
                max_size=3,
            )
        }
    ),
)


@st.composite
def trajectories(draw: st.DrawFn) -> dict[str, Any]:
    """A run in the documented format: native or text protocol, rounds, parallel calls,
    errors, empty parts, observations from a few chars to over the externalizing size."""
    native = draw(st.booleans())
    names = draw(st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=4, unique=True))
    tools = [{"name": n, "parameters": {"type": "object", "properties": {}}} for n in names]
    steps = []
    for index in range(draw(st.integers(1, 12))):
        step: dict[str, Any] = {"assistant": draw(text(20))}
        if native and draw(st.booleans()):
            calls = st.fixed_dictionaries(
                {"name": st.sampled_from([*names, "unknown_tool"]), "arguments": ARGUMENTS}
            )
            step["tool_calls"] = draw(st.lists(calls, min_size=1, max_size=3))
        size = draw(st.sampled_from([0, 8, 400, 1500]))
        step["observation"] = draw(text(size)) if size else ""
        step["is_error"] = draw(st.booleans())
        if index and draw(st.integers(0, 9)) == 0:
            step["user"] = draw(text(6)) or "go on"
        steps.append(step)
    return {
        "task": draw(text(8)) or "t",
        "system": draw(text(10)),
        "tools": tools if native else [],
        "steps": steps,
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=trajectories(), window=st.sampled_from([200_000, 3_000]))
def test_any_trajectory_replays_with_only_intended_breaks(data: dict[str, Any], window: int):
    trajectory = parse_trajectory(data, "generated")
    result = replay(trajectory, AgentRecipe(Config(context_window=window, keep_rounds=1)))
    assert result.engine.steps == len(data["steps"]), "every recorded step is played once"
    causes = {b["cause"] for b in result.engine.cache_breaks}
    assert causes <= {"prune", "compaction"}
