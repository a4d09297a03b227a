"""``benchmarks/mcp_tools.py``: at 150 generated tools both deferrals are at least 3x
cheaper than listing every MCP tool, every run finishes the framework task, and a body is
priced the way Anthropic bills deferred tools."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcp_tools", BENCH / "mcp_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mcp_tools"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_both_deferrals_are_3x_cheaper_at_150_tools_and_every_run_finishes() -> None:
    mcp_tools = bench()
    listed, engine, provider = (mcp_tools.run("150 generated", mode) for mode in mcp_tools.MODES)
    for r in (listed, engine, provider):
        assert r.finished, r.problems
        assert r.mcp_tools == 163
    assert listed.cost / engine.cost >= 3, (listed.cost, engine.cost)
    assert listed.cost / provider.cost >= 3, (listed.cost, provider.cost)
    assert engine.passes == listed.passes + 1 == provider.passes, "one more pass: the search"


def test_deferred_tools_are_billed_only_where_a_search_found_them() -> None:
    mcp_tools = bench()
    hidden = {"name": "mcp__a__b", "description": "B.", "input_schema": {"type": "object"}}
    body = {
        "tools": [
            {"name": "file_read", "description": "Read.", "input_schema": {"type": "object"}},
            {**hidden, "defer_loading": True},
            {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
        ],
        "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_search_tool_result",
                        "tool_use_id": "s",
                        "content": {
                            "type": "tool_search_tool_search_result",
                            "tool_references": [
                                {"type": "tool_reference", "tool_name": "mcp__a__b"}
                            ],
                        },
                    }
                ],
            },
        ],
    }
    text = mcp_tools.billed_text(body)
    assert text.count('"mcp__a__b"') == 1, "once, where the search found it"
    assert text.index('"tool_references":[{"description":"B."') > text.index('"go"')
    assert "defer_loading" not in text and "cache_control" not in text
    assert mcp_tools.price(["abcdef", "abcxyz"]) == (12, 3, 6 + 3 + 0.3)
