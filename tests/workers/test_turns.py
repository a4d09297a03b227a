"""A queued turn on a worker, in process: it continues what a dead worker began, runs once,
and a replica queues one turn per session at a time."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config
from contextengine.agent.loop import Agent
from contextengine.errors import ConfigError
from contextengine.providers.scripted import ReplayedScript, ScriptedProvider, scripted_from_file
from contextengine.session.entries import (
    AssistantEntry,
    ToolCallRecord,
    ToolResultEntry,
    ToolStartEntry,
    UserEntry,
)
from contextengine.session.meta import SessionMeta
from contextengine.session.store.postgres import PostgresStore
from contextengine.workers.engine import celery_app
from contextengine.workers.replica import TurnDispatcher
from contextengine.workers.tables import connect
from contextengine.workers.turns import run_turn
from support.postgres import Postgres
from support.redis import Redis

from .cluster import TURN_SCRIPT, sleeping_script


def _script(_: SessionMeta) -> ReplayedScript:
    return ReplayedScript(sleeping_script(0), model="scripted")


def _queue(config: Config, session: str, accepted_at: int, message: str) -> int:
    assert config.store is not None
    with connect(PostgresStore(config.store)) as conn:
        row = conn.execute(
            "INSERT INTO contextengine_turns (session, accepted_at, message)"
            " VALUES (%s, %s, %s) RETURNING id",
            (session, accepted_at, message),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _session_on_workers(
    postgres: Postgres, redis: Redis, tmp_path: Path, name: str, broker_db: int
) -> tuple[Config, str, TurnDispatcher]:
    """A new database and a session in it, and a replica's dispatcher (the caller stops it)."""
    config = Config(store=postgres.new_database(f"turns_{name}"), broker=redis.database(broker_db))
    with Agent(_script(SessionMeta("", "")), tmp_path, config) as agent:
        session = agent.session.id
    return config, session, TurnDispatcher(config)


def _recorded(config: Config, session: str) -> list[tuple[str, dict[str, Any]]]:
    assert config.store is not None
    with connect(PostgresStore(config.store)) as conn:
        rows = conn.execute(
            "SELECT event, data FROM contextengine_events WHERE session = %s ORDER BY id",
            (session,),
        ).fetchall()
    return [(event, json.loads(data)) for event, data in rows]


def _events(config: Config, session: str) -> list[str]:
    return [event for event, _ in _recorded(config, session)]


def test_a_turn_a_dead_worker_began_continues_without_rerunning_its_tool_call(
    postgres: Postgres, tmp_path: Path
) -> None:
    config = Config(store=postgres.new_database("turns_continue"))
    with Agent(_script(SessionMeta("", "")), tmp_path, config) as agent:
        session, accepted_at = agent.session.id, len(agent.session.records)
        # What a worker killed inside its tool call left: the message, the call, its start.
        agent.session.append(UserEntry(text="Wait, please."))
        call = ToolCallRecord(id="c1", name="shell_exec", arguments_json='{"command":"sleep 0"}')
        agent.session.append(AssistantEntry(text="Running.", tool_calls=(call,)))
        agent.session.append(ToolStartEntry(call_id="c1", tool_name="shell_exec"))
    turn = _queue(config, session, accepted_at, "Wait, please.")

    assert run_turn(turn, config, _script, partial(Agent.resume, config=config)) == "done"
    assert (
        run_turn(turn, config, _script, partial(Agent.resume, config=config)) == "skipped"
    )  # a re-delivery after it finished

    with Agent.resume(agent.session_dir, _script(SessionMeta("", "")), config) as again:
        entries = [r.entry for r in again.session.records[accepted_at:]]
    assert [e.kind for e in entries] == [
        "user",
        "assistant",
        "tool_start",
        "tool_result",
        "assistant",
    ]
    result, answer = entries[3], entries[-1]
    assert isinstance(result, ToolResultEntry) and "interrupted" in result.content
    assert isinstance(answer, AssistantEntry) and answer.text == TURN_SCRIPT[-1]["content"]
    assert _events(config, session)[-1] == "done"


def test_a_replica_queues_one_turn_per_session_at_a_time(
    postgres: Postgres, redis: Redis, tmp_path: Path
) -> None:
    config, session, dispatcher = _session_on_workers(postgres, redis, tmp_path, "queue", 1)
    try:
        first = dispatcher.accept(session, "one")
        assert first is not None and first.after == 0
        assert dispatcher.accept(session, "two") is None  # the first is still open
    finally:
        dispatcher.stop()


def test_a_scripted_file_answers_the_same_request_the_same_way_in_any_process(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TURN_SCRIPT))
    with Agent(scripted_from_file(script), tmp_path / "w1", Config()) as first:
        first.run("List the files.")
        records = len(first.session.records)
        folder = first.session_dir
    with Agent.resume(folder, scripted_from_file(script), Config()) as second:
        result = second.run("And again.")
        assert result.final_answer == TURN_SCRIPT[-1]["content"]
        calls = [
            c.id
            for r in second.session.records
            if isinstance(r.entry, AssistantEntry)
            for c in r.entry.tool_calls
        ]
        assert len(calls) == len(set(calls)) == 2
        assert len(second.session.records) > records


@pytest.mark.parametrize("text", ["", "{}", "[]"])
def test_a_bad_script_file_is_one_clear_error(tmp_path: Path, text: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(text)
    with pytest.raises(ConfigError, match=r"scripted provider .*script\.json"):
        scripted_from_file(script)


def test_a_worker_killed_while_it_looks_for_lost_turns_holds_their_redelivery_briefly(
    redis: Redis,
) -> None:
    """Looking for turns whose worker died takes a lock in Redis; a worker killed while it
    holds it leaves it behind, and until it lapses no worker redelivers anything."""
    from kombu.transport.redis import Mutex

    app = celery_app(Config(broker=redis.database(4), worker_redelivery_s=3))
    with app.connection_for_read() as connection:
        channel = connection.default_channel
        qos = channel.qos
        dead = Mutex(channel.client, qos.unacked_mutex_key, qos.unacked_mutex_expire)
        dead.__enter__()  # the scan's lock, taken and never given back
        assert 0 < channel.client.ttl(qos.unacked_mutex_key) <= 3
        dead.__exit__(None, None, None)


def test_a_stop_reaches_the_worker_running_the_turn(
    postgres: Postgres, redis: Redis, tmp_path: Path
) -> None:
    config, session, dispatcher = _session_on_workers(postgres, redis, tmp_path, "stop", 3)
    asked: list[object] = []

    def model(request: object) -> dict[str, Any]:
        # Stop is pressed while the first model call runs, as a user would in the web UI.
        asked.append(request)
        assert dispatcher.cancel(session) is not None
        return sleeping_script(0)[0]

    try:
        follow = dispatcher.accept(session, "Wait, please.")
        assert follow is not None
        (turn,) = _open_turns(config, session)
        assert (
            run_turn(
                turn,
                config,
                lambda _: ScriptedProvider(model),
                partial(Agent.resume, config=config),
            )
            == "done"
        )
        assert dispatcher.cancel(session) is None, "no turn is open any more"
    finally:
        dispatcher.stop()
    recorded = _recorded(config, session)
    assert len(asked) == 1, "no step after the stop"
    assert [e for e, _ in recorded].count("tool_result") == 1, "the step in progress ends"
    assert recorded[-1][0] == "done" and recorded[-1][1]["result"]["status"] == "cancelled"


def test_a_stop_before_a_worker_takes_the_turn_ends_it_at_once(
    postgres: Postgres, redis: Redis, tmp_path: Path
) -> None:
    config, session, dispatcher = _session_on_workers(postgres, redis, tmp_path, "stop_early", 4)
    try:
        assert dispatcher.cancel(session) is None, "nothing to stop before a turn is queued"
        assert dispatcher.accept(session, "Wait, please.") is not None
        (turn,) = _open_turns(config, session)
        stopping = dispatcher.cancel(session)
        assert stopping is not None and stopping.message == "Wait, please."
        assert stopping.entry_index == 0 and stopping.first_event_id == 1
        assert run_turn(turn, config, _script, partial(Agent.resume, config=config)) == "done"
    finally:
        dispatcher.stop()
    recorded = _recorded(config, session)
    assert "tool_call" not in [e for e, _ in recorded]
    assert recorded[-1][1]["result"]["status"] == "cancelled"


def _open_turns(config: Config, session: str) -> list[int]:
    assert config.store is not None
    with connect(PostgresStore(config.store)) as conn:
        rows = conn.execute(
            "SELECT id FROM contextengine_turns WHERE session = %s AND NOT done", (session,)
        ).fetchall()
    return [int(r[0]) for r in rows]
