"""The server on the PostgreSQL store: sessions listed, titled, their history and a restart."""

from __future__ import annotations

from pathlib import Path

from contextengine.config import Config
from support.postgres import Postgres

from .live import FINAL_ANSWER, LiveServer, post_turn, scripted_app


def test_sessions_live_in_postgres_and_survive_a_restart(
    postgres: Postgres, workspace: Path
) -> None:
    config = Config(store=postgres.new_database("server"))
    with LiveServer(scripted_app(workspace, config=config)) as server, server.client() as http:
        sid = http.post("/api/sessions").json()["id"]
        events = post_turn(http, sid, "Write notes.txt, please.")
        assert events[-1].data["result"]["final_answer"] == FINAL_ANSWER
        folder = Path(events[-1].data["result"]["session_dir"])
    assert not (folder / "session.jsonl").exists()  # the record is in the database
    with LiveServer(scripted_app(workspace, config=config)) as server, server.client() as http:
        listing = {s["id"]: s for s in http.get("/api/sessions").json()["sessions"]}
        assert listing[sid]["title"] == "Write notes.txt, please."
        assert listing[sid]["created"]
        entries = http.get(f"/api/sessions/{sid}/history").json()["entries"]
        answers = [e["text"] for e in entries if e["kind"] == "assistant" and not e["tool_calls"]]
        assert answers == [FINAL_ANSWER]
        usage = http.get(f"/api/sessions/{sid}/usage").json()
        assert usage["calls"] == len([e for e in events if e.event == "usage"]) > 0
        again = post_turn(http, sid, "And once more.")
        assert again[-1].data["result"]["status"] == "completed"
