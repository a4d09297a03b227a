from pathlib import Path

import pytest

from contextengine.errors import WorkspaceError
from contextengine.tools.workspace import OutsideWorkspace, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    (tmp_path / "ws" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret")
    return Workspace(tmp_path / "ws")


def test_relative_path_resolves_under_root(ws: Workspace) -> None:
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.resolve("") == ws.root
    assert ws.resolve("src/../src/./a.py") == ws.root / "src" / "a.py"


def test_dotdot_escape_is_refused(ws: Workspace) -> None:
    with pytest.raises(OutsideWorkspace) as info:
        ws.resolve("../outside/secret.txt")
    assert isinstance(info.value, WorkspaceError)
    assert "../outside/secret.txt" in str(info.value)
    assert str(ws.root) in str(info.value)


def test_absolute_path_inside_is_allowed_outside_refused(ws: Workspace) -> None:
    assert ws.resolve(str(ws.root / "src")) == ws.root / "src"
    with pytest.raises(OutsideWorkspace):
        ws.resolve(str(ws.root.parent / "outside" / "secret.txt"))
    with pytest.raises(OutsideWorkspace):
        ws.resolve("/etc/passwd")


def test_symlink_pointing_outside_is_refused(ws: Workspace) -> None:
    (ws.root / "link").symlink_to(ws.root.parent / "outside")
    (ws.root / "inner").symlink_to(ws.root / "src")
    with pytest.raises(OutsideWorkspace):
        ws.resolve("link/secret.txt")
    with pytest.raises(OutsideWorkspace):
        ws.resolve("link/not-yet-created.txt")
    assert ws.resolve("inner") == ws.root / "src"


def test_extra_root_is_readable(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    ws = Workspace(tmp_path / "ws", extra_roots=(sessions,))
    target = sessions / "s1" / "task_plan.md"
    assert ws.resolve(str(target)) == target
    assert ws.contains(target)
    assert not ws.contains(tmp_path / "elsewhere")


def test_display_is_relative_inside_and_absolute_outside(ws: Workspace) -> None:
    assert ws.display(ws.root / "src" / "a.py") == "src/a.py"
    assert ws.display(ws.root) == "."
    outside = ws.root.parent / "outside" / "secret.txt"
    assert ws.display(outside) == str(outside)


def test_display_sees_through_a_symlinked_root(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    ws = Workspace(tmp_path / "alias")
    assert ws.root == tmp_path / "real"
    assert ws.display(tmp_path / "alias" / "x.txt") == "x.txt"
