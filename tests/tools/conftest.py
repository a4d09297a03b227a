import json
from pathlib import Path
from typing import Any

import pytest

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset, default_toolset
from contextengine.types import ToolCall


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(Workspace(root))


@pytest.fixture
def toolset() -> Toolset:
    return default_toolset()


class Run:
    """Calls a built-in tool the way the agent loop does: a ToolCall through the guard,
    under ``ctx`` (a test that needs other settings sets one made with ``replace``)."""

    def __init__(self, ctx: ToolContext, toolset: Toolset) -> None:
        self.ctx = ctx
        self.toolset = toolset

    def __call__(self, name: str, **arguments: Any) -> ToolOutcome:
        return self.toolset.execute(ToolCall("call-1", name, json.dumps(arguments)), self.ctx)


@pytest.fixture
def run(ctx: ToolContext, toolset: Toolset) -> Run:
    """The ``Run`` of the default toolset under ``ctx``."""
    return Run(ctx, toolset)
