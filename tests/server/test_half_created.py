"""A session folder whose creation was killed before its log appeared is not a session."""

from __future__ import annotations

import shutil
from pathlib import Path

from .live import LiveServer, scripted_app


def test_a_folder_without_a_log_is_not_listed(workspace: Path) -> None:
    with (
        LiveServer(scripted_app(workspace)) as server,
        server.client() as client,
    ):
        sid = client.post("/api/sessions").json()["id"]
        folder = next(workspace.rglob("session.jsonl")).parent
        half = folder.with_name("half-created")
        shutil.copytree(folder, half)
        (half / "session.jsonl").unlink()
        listing = client.get("/api/sessions").json()
        assert [s["id"] for s in listing["sessions"]] == [sid]
