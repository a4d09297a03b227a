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


@pytest.fixture
def run(ctx: ToolContext, toolset: Toolset):  # type: ignore[no-untyped-def]
    """Call a built-in tool the way the agent loop does: a ToolCall through the guard."""

    def call(name: str, **arguments: Any) -> ToolOutcome:
        return toolset.execute(ToolCall("call-1", name, json.dumps(arguments)), ctx)

    return call
