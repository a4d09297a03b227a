"""The framework comparison harness (``benchmarks/frameworks.py``) without the peer venv:
the plain chat loop and contextengine against the fake server, and the cost rules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    """``benchmarks/frameworks.py`` as a module (its ``fwbench`` package beside it)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    name = "frameworks_bench"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "frameworks.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_plain_chat_and_contextengine_finish_the_scripted_task(bench, tmp_path):
    from fwbench.script import STEPS

    setups = [s for s in bench.SETUPS if s.name in ("plain-chat", "contextengine")]
    rows = bench.run_all(setups, tmp_path, python=None, dump=tmp_path / "dump")

    assert [r.name for r in rows] == ["plain-chat", "contextengine"]
    for row in rows:
        assert row.problems == ()
        assert row.cost.requests == len(STEPS) + 1
        assert row.cost.side_requests == 0
        assert 0.5 < row.cost.cached_share < 1
        assert row.cost.cost < row.cost.chars
        assert (tmp_path / "dump" / f"{row.name}.jsonl").read_text().count("\n") == len(STEPS) + 1
    table = bench.format_table(rows)
    assert "plain-chat" in table and " 1.00 " in table


def test_serialization_ignores_key_order_nulls_and_text_parts(bench):
    from fwbench.cost import prompt_text

    tools = [{"type": "function", "function": {"name": "ls", "parameters": {}}}]
    a = {"tools": tools, "messages": [{"role": "user", "content": "hi", "name": None}]}
    b = {
        "messages": [
            {
                "content": [{"type": "text", "text": "h"}, {"type": "text", "text": "i"}],
                "role": "user",
            }
        ],
        "tools": [{"function": {"parameters": {}, "name": "ls"}, "type": "function"}],
    }
    assert prompt_text(a) == prompt_text(b)
    assert prompt_text(a).startswith('[{"function":')


def test_cached_part_is_the_prefix_shared_with_the_previous_request(bench):
    from fwbench.cost import CostMeter, prompt_text

    from contextengine.measure.tokens import TokenCounter

    first = {"messages": [{"role": "user", "content": "task"}]}
    second = {"messages": [*first["messages"], {"role": "assistant", "content": "done"}]}
    changed = {"messages": [{"role": "user", "content": "other"}]}
    meter = CostMeter(TokenCounter())
    one, two, three = (meter.add(b, side=False) for b in (first, second, changed))

    assert one.cached_chars == 0 and one.cost == one.chars
    # Everything but the closing bracket of the first message list is reused.
    assert two.cached_chars == len(prompt_text(first)) - 1
    assert two.cost == pytest.approx(two.chars - 0.9 * two.cached_chars)
    assert 0 < two.cached_tokens < two.tokens
    assert three.cached_chars == len('[][{"content":"')


def test_side_calls_and_tool_failures_are_recognized(bench):
    from fwbench.server import TOOL_FAILURE, is_side_call

    assert is_side_call({"messages": []})
    assert is_side_call({"tools": [{}], "tool_choice": "none"})
    assert not is_side_call({"tools": [{}], "tool_choice": "auto"})
    assert TOOL_FAILURE.search("Error: write_todos is not a valid tool, try one of [ls]")
    assert TOOL_FAILURE.search("unknown tool 'x'; available tools: ls")
    assert not TOOL_FAILURE.search("Traceback:\n  File x\nNameError: name 'Counter' is not defined")


def test_a_framework_with_contextengine_is_priced_against_itself(bench):
    from fwbench.cost import RunCost

    def row(name: str, token_cost: float, breaks: int = 0):
        cost = RunCost(26, 0, 1000, 900, 190.0, 500, token_cost, 80, 40, 100)
        return bench.Row(name, cost, (), breaks)

    rows = [
        row("plain-chat", 100.0),
        row("langchain", 200.0),
        row("langchain+contextengine", 106.0, 1),
    ]
    table = bench.format_table(rows).splitlines()

    assert " x own breaks " in table[0]
    assert table[-1].split()[7:10] == ["1.06", "0.53", "1"]
    assert table[-2].split()[8] == "-"


def test_the_big_notes_variant_only_lengthens_the_spec(bench, tmp_path):
    from fwbench import task

    plain = task.seed(tmp_path / "plain") / "notes.md"
    big = task.seed(tmp_path / "big", big_notes=True) / "notes.md"
    assert big.read_text() == plain.read_text() + task.BIG_NOTES_APPENDIX
    assert len(task.BIG_NOTES_APPENDIX) > 15_000
