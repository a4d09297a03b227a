"""A scripted session driven over real HTTP: the SSE stream of a turn, usage, restarts."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from contextengine.context.request import Request

from .live import FINAL_ANSWER, LiveServer, Sse, parse_sse, post_turn, scripted_app

# Events other components add (working memory, compaction) may interleave with these.
CORE_EVENTS = {"thinking", "usage", "tool_call", "tool_result", "error", "done"}


def core(events: list[Sse]) -> list[Sse]:
    return [e for e in events if e.event in CORE_EVENTS]


def new_session(client: httpx.Client) -> str:
    response = client.post("/api/sessions")
    assert response.status_code == 201
    return response.json()["id"]


def test_a_turn_streams_its_events_in_order_ending_with_done(
    client: httpx.Client, workspace: Path
) -> None:
    sid = new_session(client)
    events = post_turn(client, sid, "Write notes.txt, then print a long line.")

    assert events[-1].event == "done"
    assert [e.event for e in core(events)] == [
        "thinking", "usage", "tool_call", "tool_result",
        "thinking", "usage", "tool_call", "tool_result",
        "thinking", "usage", "done",
    ]  # fmt: skip
    thinking = [e.data for e in events if e.event == "thinking"]
    assert thinking[0] == {"text": "I'll write the notes file first.", "reasoning": False}
    calls = [e.data for e in events if e.event == "tool_call"]
    results = [e.data for e in events if e.event == "tool_result"]
    assert [c["name"] for c in calls] == ["file_write", "shell_exec"]
    assert json.loads(calls[0]["arguments"]) == {"path": "notes.txt", "content": "hello\n"}
    assert [r["call_id"] for r in results] == [c["call_id"] for c in calls]
    assert [r["status"] for r in results] == ["success", "success"]
    assert '"_type":"compressed_ref"' in results[1]["preview"]
    # The preview is cut; the ref's kind, title, size and path come whole, as history has them.
    entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
    saved = next(
        e for e in entries if e["kind"] == "tool_result" and e["tool_name"] == "shell_exec"
    )
    ref = json.loads(saved["content"].split("\n", 1)[0])
    assert ref["title"] and ref["title"] not in results[1]["preview"]
    assert results[1]["ref"] == {
        "kind": ref["type"],
        "title": ref["title"],
        "size": ref["original_length"],
        "path": ref["path"],
        "url": None,
    }
    assert results[0]["ref"] is None
    usages = [e.data for e in events if e.event == "usage"]
    assert all(u["purpose"] == "main" and u["input_tokens"] > 0 for u in usages)
    assert usages[1]["cached_tokens"] > 0
    result = events[-1].data["result"]
    assert result["final_answer"] == FINAL_ANSWER
    assert result["status"] == "completed"
    assert result["steps"] == 3
    assert Path(result["session_dir"]).name == sid
    assert (workspace / "notes.txt").read_text() == "hello\n"


def test_usage_summary_matches_the_streamed_usage_events(client: httpx.Client) -> None:
    sid = new_session(client)
    assert client.get(f"/api/sessions/{sid}/usage").json()["calls"] == 0
    usages = [e.data for e in post_turn(client, sid, "go") if e.event == "usage"]

    summary = client.get(f"/api/sessions/{sid}/usage").json()
    total_in = sum(u["input_tokens"] for u in usages)
    cached = sum(u["cached_tokens"] for u in usages)
    assert summary["calls"] == len(usages) == 3
    assert summary["input_tokens"] == total_in
    assert summary["cached_tokens"] == cached
    assert summary["output_tokens"] == sum(u["output_tokens"] for u in usages)
    assert summary["hit_rate"] == round(cached / total_in, 4)
    assert 0 < summary["hit_rate"] < 1


def test_sessions_are_listed_with_their_first_message_and_history(client: httpx.Client) -> None:
    first = new_session(client)
    post_turn(client, first, "Write notes.txt, please.\nSecond line.")
    second = new_session(client)

    listing = client.get("/api/sessions").json()
    by_id = {s["id"]: s for s in listing["sessions"]}
    assert set(by_id) == {first, second}
    assert by_id[first]["title"] == "Write notes.txt, please."
    assert by_id[second]["title"] == ""
    assert by_id[first]["model"] == "scripted"
    assert not by_id[first]["busy"]
    assert client.get(f"/api/sessions/{first}").json() == by_id[first]

    entries = client.get(f"/api/sessions/{first}/history").json()["entries"]
    kinds = [e["kind"] for e in entries if e["kind"] in {"user", "assistant", "tool_result"}]
    assert kinds == ["user", "assistant", "tool_result", "assistant", "tool_result", "assistant"]
    answers = [e for e in entries if e["kind"] == "assistant" and not e["tool_calls"]]
    assert [a["text"] for a in answers] == [FINAL_ANSWER]


def test_a_second_message_while_a_turn_runs_is_refused_with_409(workspace: Path) -> None:
    gate = threading.Event()

    def slow_model(request: Request) -> dict[str, Any]:
        assert gate.wait(timeout=30), "the test never opened the gate"
        return {"content": "Finished once the gate opened."}

    with (
        LiveServer(scripted_app(workspace, slow_model)) as server,
        server.client() as client,
    ):
        sid = new_session(client)
        with client.stream(
            "POST", f"/api/sessions/{sid}/messages", json={"message": "first"}
        ) as first:
            assert first.status_code == 200
            assert client.get(f"/api/sessions/{sid}").json()["busy"] is True
            second = client.post(f"/api/sessions/{sid}/messages", json={"message": "second"})
            assert second.status_code == 409
            assert "already running a turn" in second.json()["error"]
            gate.set()
            events = parse_sse(first.iter_lines())
        assert events[-1].data["result"]["final_answer"] == "Finished once the gate opened."
        # The turn is over, so the session takes a message again.
        assert post_turn(client, sid, "third")[-1].event == "done"
        assert client.get(f"/api/sessions/{sid}").json()["busy"] is False


def test_sessions_survive_a_restart_and_resume(workspace: Path) -> None:
    with (
        LiveServer(scripted_app(workspace)) as server,
        server.client() as client,
    ):
        sid = new_session(client)
        post_turn(client, sid, "first turn")

    resumed_script = [{"content": "Second turn, answered after the restart."}]
    with (
        LiveServer(scripted_app(workspace, resumed_script)) as server,
        server.client() as client,
    ):
        listing = client.get("/api/sessions").json()
        assert [s["id"] for s in listing["sessions"]] == [sid]
        assert listing["workspace"] == str(workspace.resolve())
        events = post_turn(client, sid, "second turn")
        result = events[-1].data["result"]
        assert result["final_answer"] == "Second turn, answered after the restart."
        usage = next(e.data for e in events if e.event == "usage")
        assert usage["cached_tokens"] == 0  # a fresh provider, but the same recorded history
        entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
        users = [e["text"] for e in entries if e["kind"] == "user"]
        assert users == ["first turn", "second turn"]


def test_a_provider_error_ends_the_turn_with_error_and_done(workspace: Path) -> None:
    with (
        LiveServer(scripted_app(workspace, [])) as server,
        server.client() as client,
    ):
        sid = new_session(client)
        events = core(post_turn(client, sid, "anything"))
        assert [e.event for e in events] == ["error", "done"]
        assert events[0].data["error_class"] == "provider_error"
        assert events[1].data["result"]["status"] == "error"


def test_a_crash_inside_the_agent_still_ends_with_done_and_frees_the_session(
    workspace: Path,
) -> None:
    def broken_model(request: Request) -> dict[str, Any]:
        raise RuntimeError("model adapter bug")

    with (
        LiveServer(scripted_app(workspace, broken_model)) as server,
        server.client() as client,
    ):
        sid = new_session(client)
        for _ in range(2):
            events = core(post_turn(client, sid, "anything"))
            assert [e.event for e in events] == ["error", "done"]
            assert events[0].data == {
                "error_class": "turn_failed",
                "message": "RuntimeError: model adapter bug",
            }
            assert events[1].data["result"]["status"] == "error"


def test_a_client_that_disconnects_does_not_cut_the_turn_short(workspace: Path) -> None:
    gate = threading.Event()
    script = iter(
        [
            {"content": "Writing.", "tool_calls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "a"}}]},
            {"content": "Finished even though nobody was listening."},
        ]
    )  # fmt: skip

    def model(request: Request) -> dict[str, Any]:
        assert gate.wait(timeout=30), "the test never opened the gate"
        return next(script)

    with (
        LiveServer(scripted_app(workspace, model)) as server,
        server.client() as client,
    ):
        sid = new_session(client)
        with client.stream("POST", f"/api/sessions/{sid}/messages", json={"message": "go"}) as r:
            assert r.status_code == 200
        gate.set()
        deadline = time.monotonic() + 30
        while client.get(f"/api/sessions/{sid}").json()["busy"]:
            assert time.monotonic() < deadline, "the turn never ended"
            time.sleep(0.05)
        entries = client.get(f"/api/sessions/{sid}/history").json()["entries"]
        answers = [e["text"] for e in entries if e["kind"] == "assistant" and not e["tool_calls"]]
        assert answers == ["Finished even though nobody was listening."]
        assert (workspace / "a.txt").read_text() == "a"
