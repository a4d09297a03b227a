"""A workspace's sessions on disk: metadata written once, read back, sessions found by workspace."""

import json
from pathlib import Path

import pytest

from contextengine import Config, ContextEngineError
from contextengine.session.folders import create_session, sessions_root, workspace_sessions
from contextengine.session.meta import META_FILE, ProviderChoice, SessionMeta, load_meta, read_meta
from contextengine.session.render import RenderStyle


def _make(workspace: Path, config: Config, choice: ProviderChoice, sid: str) -> Path:
    session = create_session(workspace, config, RenderStyle(), choice, sid)
    session.close()
    return session.directory


def test_the_metadata_round_trips_with_the_provider_choice(tmp_path: Path) -> None:
    choice = ProviderChoice("vllm", "my-model", "http://127.0.0.1:9/v1")
    folder = _make(tmp_path, Config(), choice, "s1")
    meta = load_meta(folder)
    assert (meta.session_id, meta.workspace, meta.provider) == ("s1", str(tmp_path), choice)
    assert folder.parent.parent == sessions_root(tmp_path, Config())
    assert (tmp_path / ".contextengine" / ".gitignore").read_text() == "*\n"


def test_metadata_written_before_providers_were_recorded_still_loads(tmp_path: Path) -> None:
    (tmp_path / META_FILE).write_text(
        json.dumps({"session_id": "old", "workspace": "/w", "model": "gpt-x"})
    )
    assert load_meta(tmp_path).provider == ProviderChoice(None, "gpt-x", None)
    assert load_meta(tmp_path).parent is None


def test_a_sub_agent_session_names_its_parent(tmp_path: Path) -> None:
    meta = SessionMeta("child", "/w", parent="s1")
    (tmp_path / META_FILE).write_text(meta.to_json())
    assert load_meta(tmp_path) == meta


@pytest.mark.parametrize("text", ["{not json", '{"workspace": ""}', "[]"])
def test_bad_metadata_is_an_error_naming_the_file_or_none(tmp_path: Path, text: str) -> None:
    (tmp_path / META_FILE).write_text(text)
    with pytest.raises(ContextEngineError, match=META_FILE):
        load_meta(tmp_path)
    assert read_meta(tmp_path) is None


def test_flags_win_over_the_recorded_choice_and_another_provider_keeps_nothing() -> None:
    recorded = ProviderChoice("vllm", "m", "http://h/v1")
    assert recorded.overridden(None, None, None) == recorded
    assert recorded.overridden(None, "m2", None) == ProviderChoice("vllm", "m2", "http://h/v1")
    assert recorded.overridden("vllm", None, "http://g/v1") == ProviderChoice(
        "vllm", "m", "http://g/v1"
    )
    assert recorded.overridden("anthropic", None, None) == ProviderChoice("anthropic", "", None)


def test_sessions_are_found_by_the_workspace_their_metadata_names(tmp_path: Path) -> None:
    config = Config(root=str(tmp_path / "root"))
    mine, other = tmp_path / "ws", tmp_path / "other" / "ws"
    mine.mkdir()
    other.mkdir(parents=True)
    a = _make(mine, config, ProviderChoice(), "a")
    _make(other, config, ProviderChoice(), "b")  # same folder name, another workspace
    half = _make(mine, config, ProviderChoice(), "c")
    (half / "session.jsonl").unlink()  # a creation killed before its log appeared
    assert workspace_sessions(mine, config) == {"a": a}
