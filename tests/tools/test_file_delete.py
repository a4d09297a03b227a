"""file_delete: confined, refuses folders and the session folder, keeps a copy in the trash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall


def make_ctx(root: Path, session: Path) -> ToolContext:
    return ToolContext(
        Workspace(root, session_dir=session, session_access={"progress.md": "write"})
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def session(root: Path) -> Path:
    path = root / ".contextengine" / "sessions" / "s1"
    path.mkdir(parents=True)
    (path / "progress.md").write_text("# progress\n")
    return path


def delete(ctx: ToolContext, path: str) -> ToolOutcome:
    return default_toolset().execute(ToolCall("c", "file_delete", json.dumps({"path": path})), ctx)


def test_deleted_file_moves_to_a_numbered_trash_slot(root: Path, session: Path) -> None:
    ctx = make_ctx(root, session)
    (root / "src").mkdir()
    (root / "src" / "a.py").write_bytes(b"print(1)\n")
    (root / "b.txt").write_bytes(b"bee")
    out = delete(ctx, "src/a.py")
    assert out.status == "success"
    kept = ".contextengine/sessions/s1/trash/1/src/a.py"
    assert out.text == f"Deleted src/a.py; its content is kept at {kept}."
    assert out.data == {"path": "src/a.py", "trash": kept, "bytes": 9}
    assert not (root / "src" / "a.py").exists()
    assert (session / "trash" / "1" / "src" / "a.py").read_bytes() == b"print(1)\n"
    assert delete(ctx, "b.txt").data["trash"].endswith("trash/2/b.txt")
    (root / "b.txt").write_bytes(b"again")
    assert delete(ctx, "b.txt").data["trash"].endswith("trash/3/b.txt")


def test_cross_device_trash_copies_then_unlinks(root: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(root).st_dev:
        pytest.skip("needs a second file system at /dev/shm")
    session = Path(os.path.realpath(shm)) / f"ce-trash-{os.getpid()}-{id(root)}"
    session.mkdir()
    try:
        (root / "c.txt").write_bytes(b"cross")
        os.chmod(root / "c.txt", 0o640)
        out = delete(make_ctx(root, session), "c.txt")
        assert out.status == "success" and not (root / "c.txt").exists()
        copy = session / "trash" / "1" / "c.txt"
        assert copy.read_bytes() == b"cross" and (copy.stat().st_mode & 0o777) == 0o640
        assert out.data["trash"] == str(copy)
    finally:
        for path in sorted(session.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        session.rmdir()


def test_refusals(root: Path, session: Path, tmp_path: Path) -> None:
    ctx = make_ctx(root, session)
    (root / "dir").mkdir()
    (tmp_path / "outside.txt").write_text("keep")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    os.mkfifo(root / "fifo")
    cases = {
        "dir": "is_a_directory",
        "missing.txt": "not_found",
        "../outside.txt": "outside_workspace",
        "link.txt": "outside_workspace",
        "fifo": "special_file",
        ".contextengine/sessions/s1/progress.md": "reserved_path",
        ".contextengine/other": "reserved_path",
    }
    for path, code in cases.items():
        out = delete(ctx, path)
        assert out.error is not None and out.error.code == code, (path, out)
    assert "one file at a time" in delete(ctx, "dir").error.message
    assert (root / "dir").is_dir() and (tmp_path / "outside.txt").read_text() == "keep"
    assert (session / "progress.md").exists() and not (session / "trash").exists()


def test_without_a_session_folder_nothing_is_deleted(root: Path) -> None:
    (root / "a.txt").write_text("x")
    out = delete(ToolContext(Workspace(root)), "a.txt")
    assert out.error.code == "unavailable" and (root / "a.txt").exists()
