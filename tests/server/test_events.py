"""Numbered SSE events: ids, resume after Last-Event-ID, re-attach to a running turn, cancel."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .live import TURN_SCRIPT, Gate, LiveServer, Sse, parse_sse, post_turn, scripted_app


def new_session(client: httpx.Client) -> str:
    return client.post("/api/sessions").json()["id"]


def read_events(client: httpx.Client, sid: str, **options: Any) -> tuple[int, list[Sse]]:
    """GET the session's events stream: its status and events."""
    with client.stream("GET", f"/api/sessions/{sid}/events", **options) as response:
        return response.status_code, parse_sse(response.iter_lines())


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_every_event_carries_the_next_id_across_turns(client: httpx.Client) -> None:
    sid = new_session(client)
    first = post_turn(client, sid, "one")
    second = post_turn(client, sid, "two")
    ids = [e.id for e in first + second]
    assert ids == list(range(1, len(ids) + 1))
    assert first[-1].event == second[-1].event == "done"


def test_last_event_id_continues_exactly_after_that_event(client: httpx.Client) -> None:
    sid = new_session(client)
    streamed = post_turn(client, sid, "one") + post_turn(client, sid, "two")
    status, everything = read_events(client, sid)
    assert status == 200
    assert everything == streamed
    for after in range(len(streamed)):
        status, rest = read_events(client, sid, headers={"Last-Event-ID": str(after)})
        assert status == 200
        assert rest == streamed[after:], after
    # EventSource cannot set headers on its first request: the query parameter does it,
    # and the header of a reconnect wins over it.
    assert read_events(client, sid, params={"last_event_id": 3})[1] == streamed[3:]
    both = read_events(client, sid, params={"last_event_id": 3}, headers={"Last-Event-ID": "7"})
    assert both[1] == streamed[7:]


def test_nothing_to_follow_is_a_204(client: httpx.Client) -> None:
    sid = new_session(client)
    assert read_events(client, sid) == (204, [])
    streamed = post_turn(client, sid, "one")
    last = str(streamed[-1].id)
    assert read_events(client, sid, headers={"Last-Event-ID": last}) == (204, [])


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"headers": {"Last-Event-ID": "abc"}}, "Last-Event-ID must be an event id"),
        ({"params": {"last_event_id": -1}}, "last_event_id must not be negative"),
        ({"headers": {"Last-Event-ID": "999"}}, "Last-Event-ID 999 is after this session's"),
    ],
)
def test_a_bad_last_event_id_is_a_400(
    client: httpx.Client, options: dict[str, Any], error: str
) -> None:
    sid = new_session(client)
    post_turn(client, sid, "one")
    response = client.get(f"/api/sessions/{sid}/events", **options)
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)


def test_events_of_an_unknown_session_are_a_404(client: httpx.Client) -> None:
    assert client.get("/api/sessions/nope/events").status_code == 404
    assert client.post("/api/sessions/nope/cancel").status_code == 404


@pytest.fixture
def gated(workspace: Path) -> Iterator[tuple[httpx.Client, Gate]]:
    gate = Gate(TURN_SCRIPT)
    with LiveServer(scripted_app(workspace, gate)) as server, server.client() as client:
        yield client, gate


def test_a_client_that_lost_the_stream_re_attaches_and_misses_nothing(
    gated: tuple[httpx.Client, Gate],
) -> None:
    client, gate = gated
    sid = new_session(client)
    seen: list[Sse] = []
    with client.stream("POST", f"/api/sessions/{sid}/messages", json={"message": "go"}) as r:
        lines = r.iter_lines()
        gate.answer()
        while not any(e.event == "tool_result" for e in seen):
            block = []
            for line in lines:
                if not line:
                    break
                block.append(line)
            seen.extend(parse_sse(block))
    # The stream was dropped mid-turn; the turn goes on and the session says where it is.
    info = client.get(f"/api/sessions/{sid}").json()
    assert info["busy"] is True
    assert info["turn"] == {"first_event_id": 1, "entry_index": 0, "message": "go"}

    gate.answer()
    gate.answer()
    last = seen[-1].id
    status, rest = read_events(client, sid, headers={"Last-Event-ID": str(last)})
    assert status == 200
    assert rest[-1].event == "done"
    assert rest[-1].data["result"]["status"] == "completed"
    full = seen + rest
    assert [e.id for e in full] == list(range(1, len(full) + 1))
    assert read_events(client, sid)[1] == full
    assert client.get(f"/api/sessions/{sid}").json()["turn"] is None


def test_several_listeners_of_a_running_turn_see_the_same_events(
    gated: tuple[httpx.Client, Gate],
) -> None:
    client, gate = gated
    sid = new_session(client)
    results: dict[str, list[Sse]] = {}

    def post() -> None:
        results["post"] = post_turn(client, sid, "go")

    poster = threading.Thread(target=post)
    poster.start()
    gate.answer()
    wait_until(lambda: client.get(f"/api/sessions/{sid}").json()["busy"], "the turn")

    def listen(name: str) -> None:
        results[name] = read_events(client, sid)[1]

    listeners = [threading.Thread(target=listen, args=(f"l{n}",)) for n in range(3)]
    for listener in listeners:
        listener.start()
    gate.answer()
    gate.answer()
    for thread in (poster, *listeners):
        thread.join(timeout=30)
    assert results["post"][-1].event == "done"
    for n in range(3):
        assert results[f"l{n}"] == results["post"]


def test_the_event_record_and_its_ids_survive_a_restart(workspace: Path) -> None:
    with LiveServer(scripted_app(workspace)) as server, server.client() as client:
        sid = new_session(client)
        before = post_turn(client, sid, "one")
    with LiveServer(scripted_app(workspace)) as server, server.client() as client:
        assert read_events(client, sid)[1] == before
        after = post_turn(client, sid, "two")
        assert after[0].id == before[-1].id + 1
        assert read_events(client, sid, headers={"Last-Event-ID": "2"})[1] == (before + after)[2:]


def test_cancel_stops_the_turn_at_its_next_step_and_the_session_goes_on(
    workspace: Path,
) -> None:
    gate = Gate(
        [
            TURN_SCRIPT[0],
            {"content": "The second turn's answer, after the stop."},
        ]
    )
    with LiveServer(scripted_app(workspace, gate)) as server, server.client() as client:
        sid = new_session(client)
        assert client.post(f"/api/sessions/{sid}/cancel").status_code == 409
        results: dict[str, list[Sse]] = {}
        poster = threading.Thread(target=lambda: results.update(first=post_turn(client, sid, "go")))
        poster.start()
        assert gate.asked.acquire(timeout=30)
        stop = client.post(f"/api/sessions/{sid}/cancel")
        assert stop.status_code == 202
        assert stop.json()["cancelling"] is True
        gate.allowed.release()  # the reply in flight arrives: its tool call is not run
        poster.join(timeout=30)
        events = results["first"]
        assert [e.event for e in events if e.event in {"tool_call", "tool_result", "done"}] == [
            "tool_call",
            "tool_result",
            "done",
        ]
        result = events[-1].data["result"]
        assert result["status"] == "cancelled"
        assert result["steps"] == 1
        assert not (workspace / "notes.txt").exists()
        (answered,) = [e for e in events if e.event == "tool_result"]
        assert "Not run: the turn was cancelled." in answered.data["preview"]
        assert client.get(f"/api/sessions/{sid}").json()["busy"] is False

        entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
        kinds = [e["kind"] for e in entries if e["kind"] in {"user", "assistant", "tool_result"}]
        assert kinds == ["user", "assistant", "tool_result"]

        poster = threading.Thread(
            target=lambda: results.update(second=post_turn(client, sid, "on"))
        )
        poster.start()
        gate.answer()
        poster.join(timeout=30)
        done = results["second"][-1].data["result"]
        assert done["status"] == "completed"
        assert done["final_answer"] == "The second turn's answer, after the stop."
        assert results["second"][0].id == events[-1].id + 1
