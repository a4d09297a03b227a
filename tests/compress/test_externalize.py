import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from contextengine.compress.externalize import (
    THRESHOLDS,
    CompressedRef,
    Externalizer,
    UnrecoverableRef,
    is_compressed_ref,
    make_preview,
    over_threshold,
)
from contextengine.errors import ContextEngineError
from contextengine.toolkit.workspace import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def ext(workspace: Workspace) -> Externalizer:
    return Externalizer(workspace.root / "s1" / "artifacts", workspace.display)


def test_thresholds_by_kind() -> None:
    assert THRESHOLDS == {"webpage": 2000, "file": 5000, "db": 1000, "other": 3000}
    assert not over_threshold("x" * 3000, "other")
    assert over_threshold("x" * 3001, "other")
    assert not over_threshold("x" * 5000, "file")
    assert over_threshold("x" * 1001, "db")
    assert over_threshold("x" * 2001, "webpage")


def test_store_writes_exact_text_under_a_deterministic_name(ext: Externalizer) -> None:
    text = "héllo\r\nworld\n"
    ref = ext.store("obs-000042-file_read", text, "file", "file_read a.py")
    target = ext.artifacts_dir / "obs-000042-file_read.txt"
    assert target.read_bytes() == text.encode()
    assert ref.path == "s1/artifacts/obs-000042-file_read.txt"
    assert (ref.type, ref.title, ref.original_length, ref.recoverable) == (
        "file",
        "file_read a.py",
        len(text),
        True,
    )
    assert ref.preview == text
    assert ext.session_relative(target) == "artifacts/obs-000042-file_read.txt"
    assert sorted(p.name for p in ext.artifacts_dir.iterdir()) == ["obs-000042-file_read.txt"]


def test_stubs_name_an_artifact_by_the_short_path_and_refs_by_the_displayed_one(
    workspace: Workspace,
) -> None:
    ext = Externalizer(
        workspace.root / "s1" / "artifacts", workspace.display, lambda p: f"short/{p.name}"
    )
    assert ext.stub_path_for("obs-7 ls") == "short/obs-7_ls.txt"
    assert ext.stub_path_for("obs-7 ls") == ext.stub_path(ext.path_for("obs-7 ls"))
    assert ext.display_path("obs-7 ls") == "s1/artifacts/obs-7_ls.txt"


def test_name_hints_are_made_safe(ext: Externalizer) -> None:
    assert ext.path_for("obs-1-mcp/../evil tool").name == "obs-1-mcp_.._evil_tool.txt"
    assert ext.path_for("../..").name == "artifact.txt"
    assert ext.path_for("x").parent == ext.artifacts_dir


def test_storing_again_replaces_atomically(ext: Externalizer) -> None:
    ext.store("obs-1", "first")
    ref = ext.store("obs-1", "second")
    assert ext.recover(ref) == "second"
    assert [p.name for p in ext.artifacts_dir.iterdir()] == ["obs-1.txt"]


def test_ref_json_round_trip(ext: Externalizer) -> None:
    ref = ext.store("obs-7-web", "page " * 1000, "webpage", "Docs", url="https://example.com/d")
    rendered = ref.to_json()
    obj = json.loads(rendered)
    assert obj["_type"] == "compressed_ref"
    assert obj["url"] == "https://example.com/d"
    assert "query" not in obj
    assert is_compressed_ref(obj)
    assert CompressedRef.from_json(rendered) == ref
    assert rendered == ref.to_json()
    with pytest.raises(UnrecoverableRef, match="not a compressed_ref"):
        CompressedRef.from_json('{"path": "x"}')
    with pytest.raises(UnrecoverableRef, match="not a compressed_ref"):
        CompressedRef.from_json("not json")


def test_preview_keeps_head_and_tail() -> None:
    text = "H" * 300 + "M" * 5000 + "T" * 200
    preview = make_preview(text)
    assert preview == "H" * 300 + "\n[... 5000 chars ...]\n" + "T" * 200


def test_a_ref_needs_a_source() -> None:
    with pytest.raises(ValidationError, match="needs a path, url or query"):
        CompressedRef(type="other", original_length=3, recoverable=False)


# NUL-free arbitrary unicode, with line endings and awkward characters mixed in.
_TEXT = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))),
        st.sampled_from(["\r\n", "\r", "\n", "\t", "é", "😀", "\u2028", "\ufeff"]),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=_TEXT)
def test_recover_returns_the_original_exactly(tmp_path_factory, text: str) -> None:
    root = tmp_path_factory.mktemp("rt")
    ext = Externalizer(root / "artifacts", Workspace(root).display)
    ref = ext.store("obs-000001-shell_exec", text)
    assert ext.recover(ref) == text
    assert (root / "artifacts" / "obs-000001-shell_exec.txt").read_bytes() == text.encode()
    assert ext.recover(CompressedRef.from_json(ref.to_json())) == text


def test_unrecoverable_refs_raise_clear_errors(ext: Externalizer) -> None:
    url_only = CompressedRef(type="webpage", url="https://x", original_length=9, recoverable=False)
    with pytest.raises(UnrecoverableRef, match="'https://x' has no saved copy"):
        ext.recover(url_only)
    assert issubclass(UnrecoverableRef, ContextEngineError)
    ref = ext.store("obs-2", "content")
    foreign = ref.model_copy(update={"path": "elsewhere/obs-2.txt"})
    with pytest.raises(UnrecoverableRef, match="not an artifact in"):
        ext.recover(foreign)
    (ext.artifacts_dir / "obs-2.txt").write_text("tampered!")
    with pytest.raises(UnrecoverableRef, match="was changed after it was stored"):
        ext.recover(ref)
    (ext.artifacts_dir / "obs-2.txt").unlink()
    with pytest.raises(UnrecoverableRef, match="is missing"):
        ext.recover(ref)
