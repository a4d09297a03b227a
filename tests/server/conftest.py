"""Fixtures: a workspace, a live server on it, and an HTTP client for that server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .live import LiveServer, scripted_app


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    return folder


@pytest.fixture
def client(workspace: Path) -> Iterator[httpx.Client]:
    """A client of a live server whose sessions run the scripted turn."""
    with (
        LiveServer(scripted_app(workspace)) as server,
        server.client() as http,
    ):
        yield http
