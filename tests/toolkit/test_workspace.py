from pathlib import Path

import pytest

from contextengine.errors import WorkspaceError
from contextengine.toolkit.workspace import OutsideWorkspace, PathRefused, Workspace


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


def test_session_folder_outside_is_readable_only_for_its_readable_names(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "s1"
    (session / "artifacts").mkdir(parents=True)
    ws = Workspace(
        tmp_path / "ws",
        session_dir=session,
        session_access={"task_plan.md": "write", "artifacts": "read"},
    )
    plan = session / "task_plan.md"
    assert ws.resolve(str(plan)) == plan
    assert ws.resolve(str(session / "artifacts" / "a.txt")) == session / "artifacts" / "a.txt"
    with pytest.raises(PathRefused) as info:
        ws.resolve(str(session / "session.jsonl"))
    assert info.value.code == "reserved_path"
    with pytest.raises(OutsideWorkspace):
        ws.resolve(str(tmp_path / "elsewhere"))


def test_engine_folder_inside_the_workspace_is_reserved(ws: Workspace) -> None:
    (ws.root / ".contextengine").mkdir()
    with pytest.raises(PathRefused) as info:
        ws.resolve(".contextengine/sessions/x/session.jsonl")
    assert info.value.code == "reserved_path"


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


@pytest.fixture(params=[True, False], ids=["session inside", "session outside"])
def inside(request: pytest.FixtureRequest) -> bool:
    """Whether the sessions live inside the workspace (the default) or beside it."""
    return bool(request.param)


def two_sessions(tmp_path: Path, inside: bool, first: str, second: str) -> tuple[Path, ...]:
    """The workspace ``tmp_path/ws`` and two of its sessions, in it or beside it, each with
    an artifact ``3-Bash.txt`` naming its session, the first with a plan."""
    root = tmp_path / "ws"
    sessions = root / ".contextengine" / "sessions" if inside else tmp_path / "state"
    for name in (first, second):
        (sessions / name / "artifacts").mkdir(parents=True)
        (sessions / name / "artifacts" / "3-Bash.txt").write_text(f"{name}'s")
    (sessions / first / "task_plan.md").write_text(f"# {first}'s plan")
    return root, sessions / first, sessions / second


def test_the_artifacts_alias_opens_this_sessions_artifacts_read_only(
    tmp_path: Path, inside: bool
) -> None:
    root, mine, _ = two_sessions(tmp_path, inside, "abc", "xyz")
    ws = Workspace(root, session_dir=mine, session_access={"artifacts": "read"})
    saved = mine / "artifacts" / "3-Bash.txt"

    assert ws.artifact_path(saved) == ".contextengine/artifacts/3-Bash.txt"
    assert ws.resolve(".contextengine/artifacts/3-Bash.txt") == saved
    assert ws.resolve(str(root / ".contextengine" / "artifacts" / "3-Bash.txt")) == saved
    for refused, access in [
        (".contextengine/artifacts/3-Bash.txt", "write"),
        (".contextengine/artifacts/../task_plan.md", "read"),  # not among the readable names
        (".contextengine/artifacts/../../xyz/artifacts/3-Bash.txt", "read"),
        (".contextengine/artifactsX/3-Bash.txt", "read"),
    ]:
        with pytest.raises(PathRefused), ws.locate(refused, access):  # type: ignore[arg-type]
            pass


def test_a_path_that_is_not_a_session_artifact_is_shown_as_display_shows_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    session = root / ".contextengine" / "sessions" / "abc"
    (session / "artifacts").mkdir(parents=True)
    with_session = Workspace(root, session_dir=session, session_access={"artifacts": "read"})
    assert with_session.artifact_path(root / "notes.txt") == "notes.txt"
    assert with_session.artifact_path(session / "task_plan.md") == (
        ".contextengine/sessions/abc/task_plan.md"
    )
    without = Workspace(root)
    saved = session / "artifacts" / "1-x.txt"
    assert without.artifact_path(saved) == ".contextengine/sessions/abc/artifacts/1-x.txt"
    with pytest.raises(PathRefused):
        without.resolve(".contextengine/artifacts/1-x.txt")


def test_a_sub_agents_alias_opens_its_parents_artifacts_and_its_own_go_by_full_path(
    tmp_path: Path, inside: bool
) -> None:
    root, parent, child = two_sessions(tmp_path, inside, "parent", "child")
    ws = Workspace(
        root,
        session_dir=child,
        session_access={"artifacts": "read"},
        private=[parent.parent],
        artifacts=parent / "artifacts",
    )

    with ws.locate(".contextengine/artifacts/3-Bash.txt", "read") as where:
        assert where.real == parent / "artifacts" / "3-Bash.txt"
        assert where.shown == ".contextengine/artifacts/3-Bash.txt"
    own = child / "artifacts" / "3-Bash.txt"
    assert ws.artifact_path(own) == ws.display(own) != ".contextengine/artifacts/3-Bash.txt"
    assert ws.resolve(ws.artifact_path(own)) == own
    for refused, access in [
        (".contextengine/artifacts/3-Bash.txt", "write"),
        (".contextengine/artifacts/new.txt", "write"),
        (".contextengine/artifacts/../task_plan.md", "read"),
        (str(parent / "artifacts" / "3-Bash.txt"), "read"),  # the long path stays private
    ]:
        with pytest.raises(PathRefused), ws.locate(refused, access):  # type: ignore[arg-type]
            pass
