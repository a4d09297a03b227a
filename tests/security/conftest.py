"""Fixtures the hostile-input tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace
