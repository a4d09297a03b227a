"""``benchmarks/mcp_tools.py``: tool search is at least 3x cheaper than listing every MCP
tool at 150 generated tools, and both runs finish the task."""

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


def test_tool_search_is_3x_cheaper_at_150_tools_and_both_finish() -> None:
    mcp_tools = bench()
    listed = mcp_tools.run("150 generated", deferred=False)
    searched = mcp_tools.run("150 generated", deferred=True)
    assert listed.finished and searched.finished
    assert listed.mcp_tools == searched.mcp_tools == 163
    assert listed.cost / searched.cost >= 3, (listed.cost, searched.cost)
    assert searched.requests == listed.requests + 1, "one more call: the search"


def test_the_cached_part_is_the_prefix_shared_with_the_previous_request() -> None:
    mcp_tools = bench()
    assert mcp_tools._common_prefix("abcdef", "abcxyz") == 3
    assert mcp_tools._common_prefix("", "abc") == 0
    assert mcp_tools._common_prefix("same", "same") == 4
