"""Sessions managed over HTTP: search, rename, delete, sub-agent parents, and hand-over answers."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.session.manage import TITLE_FILE, TRASH_DIR

from .live import LiveServer, Sse, post_turn, scripted_app

WAIT_S = 30
QUESTION = "Which variable should the script print?"


def new_session(client: httpx.Client) -> str:
    response = client.post("/api/sessions")
    assert response.status_code == 201
    return response.json()["id"]


def listed(client: httpx.Client, search: str | None = None) -> list[dict[str, Any]]:
    params = {"search": search} if search is not None else {}
    response = client.get("/api/sessions", params=params)
    assert response.status_code == 200
    return response.json()["sessions"]


def answer_only(client: httpx.Client, message: str) -> tuple[str, Path]:
    """A session with one answered turn: its id and folder."""
    sid = new_session(client)
    events = post_turn(client, sid, message)
    return sid, Path(events[-1].data["result"]["session_dir"])


def test_search_rename_and_delete(workspace: Path) -> None:
    answer = [{"content": "An answer long enough to count."}] * 2
    with LiveServer(scripted_app(workspace, answer)) as server, server.client() as client:
        apples, _ = answer_only(client, "Count the apples in the basket.")
        pears, folder = answer_only(client, "Weigh the pears.\nThen the plums.")

        assert [s["id"] for s in listed(client, "APPLES")] == [apples]
        assert [s["id"] for s in listed(client, "plums")] == [pears]  # any user message
        assert [s["id"] for s in listed(client, pears[-6:])] == [pears]
        assert {s["id"] for s in listed(client, "  ")} == {apples, pears}
        assert listed(client, "bananas") == []

        log = (folder / "session.jsonl").read_bytes()
        renamed = client.patch(f"/api/sessions/{pears}", json={"title": "  Fruit scale  "})
        assert renamed.status_code == 200
        assert renamed.json()["title"] == "Fruit scale"
        assert (folder / TITLE_FILE).read_text() == "Fruit scale\n"
        assert (folder / "session.jsonl").read_bytes() == log, "the log is never rewritten"
        assert {s["id"]: s["title"] for s in listed(client)}[pears] == "Fruit scale"
        assert [s["id"] for s in listed(client, "scale")] == [pears]

        bad = client.patch(f"/api/sessions/{pears}", json={"title": "two\nlines"})
        assert bad.status_code == 400 and "one line" in bad.json()["error"]
        cleared = client.patch(f"/api/sessions/{pears}", json={"title": ""})
        assert cleared.json()["title"] == "Weigh the pears."
        assert not (folder / TITLE_FILE).exists()

        deleted = client.delete(f"/api/sessions/{apples}")
        assert deleted.status_code == 200
        trash = Path(deleted.json()["trash"])
        assert TRASH_DIR in trash.parts and trash.name == apples
        assert (trash / "session.jsonl").is_file()
        assert [s["id"] for s in listed(client)] == [pears]
        gone = client.get(f"/api/sessions/{apples}")
        assert gone.status_code == 404
        assert client.delete(f"/api/sessions/{apples}").status_code == 404


def test_a_session_is_not_deleted_while_its_turn_runs(workspace: Path) -> None:
    from .live import Gate

    gate = Gate([{"content": "An answer long enough to count."}])
    with LiveServer(scripted_app(workspace, gate)) as server, server.client() as client:
        sid = new_session(client)
        turn = threading.Thread(target=post_turn, args=(client, sid, "hi"))
        turn.start()
        assert gate.asked.acquire(timeout=WAIT_S)
        refused = client.delete(f"/api/sessions/{sid}")
        assert refused.status_code == 409 and "running a turn" in refused.json()["error"]
        gate.allowed.release()
        turn.join(WAIT_S)
        assert client.delete(f"/api/sessions/{sid}").status_code == 200


def test_a_sub_agent_session_names_its_parent(workspace: Path) -> None:
    config = Config()
    parent = Agent(ScriptedProvider([]), workspace, config)
    child = Agent(ScriptedProvider([]), workspace, config)
    meta = child.session_dir / "session.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "parent": parent.session.id}))
    parent.close()
    child.close()
    with LiveServer(scripted_app(workspace, [], config)) as server, server.client() as client:
        parents = {s["id"]: s["parent"] for s in listed(client)}
        assert parents == {parent.session.id: None, child.session.id: parent.session.id}
        one = client.get(f"/api/sessions/{child.session.id}").json()
        assert one["parent"] == parent.session.id


def failing_step() -> dict[str, Any]:
    command = "python3 -c 'print(undefined_name)'"
    return {
        "content": "Trying.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}],
    }


HAND_OVER = [
    failing_step(),
    failing_step(),
    failing_step(),
    {"content": f"1. a\n2. b\n3. c\n4. d\n5. Yes.\nHUMAN_HELP: yes - {QUESTION}"},
    {"content": "Fixed: the script prints the name now."},
]


def answer_when_asked(client: httpx.Client, sid: str, text: str) -> httpx.Response:
    """Posts the answer as soon as the turn waits for one (409 until then)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        response = client.post(f"/api/sessions/{sid}/answer", json={"answer": text})
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


def turn_in_thread(client: httpx.Client, sid: str) -> tuple[threading.Thread, list[list[Sse]]]:
    got: list[list[Sse]] = []
    thread = threading.Thread(target=lambda: got.append(post_turn(client, sid, "Probe python.")))
    thread.start()
    return thread, got


def test_an_answer_continues_the_turn_that_asked(workspace: Path) -> None:
    with LiveServer(scripted_app(workspace, HAND_OVER)) as server, server.client() as client:
        sid = new_session(client)
        idle = client.post(f"/api/sessions/{sid}/answer", json={"answer": "too early"})
        assert idle.status_code == 409 and "not waiting" in idle.json()["error"]
        thread, got = turn_in_thread(client, sid)
        answered = answer_when_asked(client, sid, "Print the name variable.")
        assert answered.status_code == 200, answered.text
        thread.join(WAIT_S)
        events = got[0]
        questions = [e.data for e in events if e.event == "question"]
        assert questions == [{"question": QUESTION}]
        result = events[-1].data["result"]
        assert result["status"] == "completed"
        assert result["final_answer"] == HAND_OVER[-1]["content"]
        entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
        users = [e["text"] for e in entries if e["kind"] == "user"]
        assert users == ["Probe python.", "Print the name variable."]


def test_stop_while_waiting_for_an_answer_ends_the_turn(workspace: Path) -> None:
    with LiveServer(scripted_app(workspace, HAND_OVER)) as server, server.client() as client:
        sid = new_session(client)
        thread, got = turn_in_thread(client, sid)
        deadline = time.monotonic() + WAIT_S
        while client.get(f"/api/sessions/{sid}").json()["question"] != QUESTION:
            assert time.monotonic() < deadline, "the turn never asked"
            time.sleep(0.05)
        assert client.post(f"/api/sessions/{sid}/cancel").status_code == 202
        thread.join(WAIT_S)
        assert not thread.is_alive()
        result = got[0][-1].data["result"]
        assert result["status"] == "needs_human" and result["error"] == QUESTION
