"""The ``store`` setting: which store, where the session folders go, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from contextengine import Agent, Config, ScriptedProvider
from contextengine.errors import ConfigError
from contextengine.session.store.choice import open_store, sessions_base
from contextengine.session.store.files import FileStore
from contextengine.session.store.postgres import PostgresStore


def test_the_default_is_files_under_the_workspace() -> None:
    assert isinstance(open_store(Config()), FileStore)
    assert sessions_base(Config()) is None


@pytest.mark.parametrize("url", ["postgresql://u@h:5432/db", "postgres://u@h/db"])
def test_a_postgres_url_chooses_postgres(url: str) -> None:
    store = open_store(Config(store=url))
    assert isinstance(store, PostgresStore)
    assert sessions_base(Config(store=url)) is None


def test_the_password_never_shows() -> None:
    assert open_store(Config(store="postgresql://u:secret@h/db")).url == "postgresql://u:***@h/db"


@pytest.mark.parametrize("value", ["/srv/sessions", "file:///srv/sessions"])
def test_a_folder_or_file_url_names_the_sessions_folder(value: str) -> None:
    assert sessions_base(Config(store=value)) == "/srv/sessions"
    assert sessions_base(Config(store=value, root="/srv/sessions")) == "/srv/sessions"


def test_a_store_folder_and_another_root_are_refused() -> None:
    with pytest.raises(ConfigError, match="name two session folders"):
        sessions_base(Config(store="/a", root="/b"))


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown kind 'redis'"):
        Config.load(env={"CONTEXTENGINE_STORE": "redis://h/0"})


def test_the_environment_sets_the_store() -> None:
    assert Config.load(env={"CONTEXTENGINE_STORE": "postgresql://h/db"}).store == (
        "postgresql://h/db"
    )


def test_an_agent_keeps_its_session_in_the_store_folder(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = Config(store=f"file://{tmp_path / 'shared'}")
    with Agent(ScriptedProvider([{"content": "hi"}]), workspace, config) as agent:
        agent.run("hello")
        assert agent.session_dir.is_relative_to(tmp_path / "shared" / "default" / "default")
        assert (agent.session_dir / "session.jsonl").is_file()
