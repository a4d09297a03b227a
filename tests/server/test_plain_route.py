"""A plain API handler costs a request one thread hop: its reply is not validated again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from .live import TURN_SCRIPT, LiveServer, scripted_app


def test_each_cheap_endpoint_takes_one_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kwargs)

    with LiveServer(scripted_app(tmp_path, TURN_SCRIPT)) as server, server.client() as client:
        sid = client.post("/api/sessions").json()["id"]
        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
        for path in ("/api/server", "/api/sessions", f"/api/sessions/{sid}/usage"):
            hops.clear()
            response = client.get(path)
            assert response.status_code == 200, response.text
            assert isinstance(response.json(), dict)
            assert len(hops) == 1, (path, hops)
