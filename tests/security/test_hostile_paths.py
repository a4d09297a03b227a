"""A hostile-path corpus against every file tool, L2 (CODE_LAW.md) and the server's file routes.

Each case plants what an agent's shell could plant (symlinks, hard links, FIFOs, sockets,
links into the session folder) or passes what a model could pass (``..``, absolute paths,
NUL bytes, over-long names), then checks that nothing escaped: no byte of an outside file
appears in any result, no outside file or session file is created or changed, and nothing
hangs (every test has a timeout). A race test swaps a folder for a symlink to the outside
while file_read and file_write run in a loop.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from contextengine import Config, ScriptedProvider
from contextengine.context.code_law import CodeLawReader
from contextengine.server import create_app
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import PathRefused, Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

SECRET = "OUTSIDE-SECRET-7f3a"
SESSION_PARTS = (".contextengine", "sessions", "org", "team", "ws", "s1")
SESSION_ACCESS: dict[str, Any] = {"task_plan.md": "write", "artifacts": "read"}

pytestmark = pytest.mark.timeout(20)


@dataclass
class Box:
    """A workspace, a folder outside it holding a secret, and a session folder inside."""

    ws: Path
    outside: Path
    session: Path

    def snapshot(self) -> dict[str, tuple[bytes, int, int]]:
        """Every file outside the workspace and in the session folder: bytes, mtime, links."""
        state = {}
        for top in (self.outside, self.session):
            for folder, _dirs, names in os.walk(top):
                for name in names:
                    path = Path(folder, name)
                    info = path.lstat()
                    data = os.readlink(path).encode() if path.is_symlink() else b""
                    if path.is_file() and not path.is_symlink():
                        data = path.read_bytes()
                    state[str(path)] = (data, info.st_mtime_ns, info.st_nlink)
        return state


@pytest.fixture
def box(tmp_path: Path) -> Box:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "inside.txt").write_text("inside text\n")
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (outside / "dir" / "secret.txt").write_text(f"{SECRET}\n")
    session = ws.joinpath(*SESSION_PARTS)
    (session / "artifacts").mkdir(parents=True)
    (session / "session.jsonl").write_text('{"header": true}\n')
    (session / "task_plan.md").write_text("# Plan\n")
    (session / "artifacts" / "a.txt").write_text("artifact\n")
    return Box(ws, outside, session)


def run_tool(box: Box, name: str, **arguments: Any) -> ToolOutcome:
    """One tool call the way the loop makes it (JSON arguments through the guard)."""
    ctx = ToolContext(Workspace(box.ws, session_dir=box.session, session_access=SESSION_ACCESS))
    return default_toolset().execute(ToolCall("c1", name, json.dumps(arguments)), ctx)


def assert_nothing_escaped(box: Box, before: dict[str, Any], outcome: ToolOutcome) -> None:
    """No secret byte in the outcome, nothing outside or in the session folder touched."""
    assert SECRET not in outcome.text
    assert SECRET not in json.dumps(outcome.data)
    assert box.snapshot() == before


# --- the planted things ---------------------------------------------------------------

Plant = Callable[[Box], None]


def link(name: str, target: Callable[[Box], str | Path]) -> Plant:
    """A symlink ``name`` in the workspace pointing at ``target(box)``."""
    return lambda box: (box.ws / name).symlink_to(target(box))


def fifo(box: Box) -> None:
    os.mkfifo(box.ws / "fifo")


def unix_socket(box: Box) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(box.ws / "sock"))
    sock.close()


def hard_link(box: Box) -> None:
    os.link(box.outside / "secret.txt", box.ws / "hard.txt")


def hard_link_to_session_log(box: Box) -> None:
    os.link(box.session / "session.jsonl", box.ws / "log.jsonl")


def nothing(box: Box) -> None:
    return None


def session_path(*rest: str) -> str:
    return "/".join((*SESSION_PARTS, *rest))


# (id, plant, path, codes a refusal may have)
READ_VECTORS: list[tuple[str, Plant, str | Callable[[Box], str], set[str]]] = [
    ("dotdot", nothing, "../outside/secret.txt", {"outside_workspace"}),
    ("dotdot-deep", nothing, "sub/../../outside/secret.txt", {"outside_workspace"}),
    ("dotdot-many", nothing, "../../../../../../etc/passwd", {"outside_workspace"}),
    ("absolute", nothing, lambda b: str(b.outside / "secret.txt"), {"outside_workspace"}),
    ("etc-passwd", nothing, "/etc/passwd", {"outside_workspace"}),
    ("double-slash", nothing, "//etc/passwd", {"outside_workspace"}),
    (
        "file-symlink",
        link("l.txt", lambda b: b.outside / "secret.txt"),
        "l.txt",
        {"outside_workspace"},
    ),
    (
        "relative-file-symlink",
        link("l.txt", lambda b: "../outside/secret.txt"),
        "l.txt",
        {"outside_workspace"},
    ),
    (
        "dir-symlink",
        link("ld", lambda b: b.outside / "dir"),
        "ld/secret.txt",
        {"outside_workspace"},
    ),
    (
        "inside-link-then-dotdot",
        link("in", lambda b: b.ws / "sub"),
        "in/../../outside/secret.txt",
        {"outside_workspace"},
    ),
    (
        "symlink-chain",
        lambda b: (
            (b.ws / "a").symlink_to("b"),
            (b.ws / "b").symlink_to("sub/../../outside"),
        ),
        "a/secret.txt",
        {"outside_workspace"},
    ),
    ("symlink-loop", link("loop", lambda b: "loop"), "loop", {"invalid_path"}),
    ("dev-zero", link("z", lambda b: "/dev/zero"), "z", {"outside_workspace"}),
    ("proc-self", link("p", lambda b: "/proc/self/environ"), "p", {"outside_workspace"}),
    ("fifo", fifo, "fifo", {"special_file", "not_a_directory"}),
    ("socket", unix_socket, "sock", {"special_file", "not_a_directory"}),
    ("nul-byte", nothing, "sub/inside.txt\0../../outside/secret.txt", {"invalid_path"}),
    # The JSON arguments arrive with the lone surrogate as U+FFFD (untrusted.parse_json),
    # so the tool looks for "sub/\ufffd"; see test_a_lone_surrogate_reaches_a_tool_as_u_fffd.
    ("lone-surrogate", nothing, "sub/\ud800", {"not_found"}),
    ("long-path", nothing, "a/" * 3000, {"invalid_path"}),
    ("long-name", nothing, "x" * 300, {"invalid_path"}),
    ("session-log", nothing, session_path("session.jsonl"), {"reserved_path"}),
    ("engine-dir", nothing, ".contextengine", {"reserved_path"}),
    (
        "link-to-session-log",
        link("s.jsonl", lambda b: b.session / "session.jsonl"),
        "s.jsonl",
        {"reserved_path"},
    ),
    (
        "relative-link-into-engine-dir",
        link("eng", lambda b: ".contextengine/sessions"),
        "eng",
        {"reserved_path"},
    ),
]
# Every read-family tool gets the path; edit tries to change the secret; grep matches all.
READ_TOOLS: dict[str, dict[str, Any]] = {
    "file_read": {},
    "file_edit": {"old_text": "OUTSIDE", "new_text": "PWNED"},
    "file_ls": {},
    "file_grep": {"pattern": "."},
}


@pytest.mark.parametrize("tool", READ_TOOLS)
@pytest.mark.parametrize(
    ("plant", "path", "codes"), [v[1:] for v in READ_VECTORS], ids=[v[0] for v in READ_VECTORS]
)
def test_read_family_refuses_hostile_paths(
    box: Box, tool: str, plant: Plant, path: Any, codes: set[str]
) -> None:
    plant(box)
    path = path(box) if callable(path) else path
    before = box.snapshot()
    outcome = run_tool(box, tool, path=path, **READ_TOOLS[tool])
    assert outcome.status == "error", outcome.text
    assert outcome.error is not None
    # ls of a file is "not a directory"; edit of the session log is refused as a write.
    allowed = codes | {"not_a_directory", "is_a_directory", "not_found"}
    assert outcome.error.code in allowed, outcome.error
    if tool == "file_read":
        assert outcome.error.code in codes, outcome.error
    assert_nothing_escaped(box, before, outcome)


def test_a_lone_surrogate_reaches_a_tool_as_u_fffd(box: Box) -> None:
    # The same path the session records for the call (agent/replies.py), so the model's
    # history and what the tool did agree; the tool sees only valid text.
    missing = run_tool(box, "file_read", path="sub/\ud800")
    assert missing.error is not None and missing.error.code == "not_found"
    assert "sub/\ufffd" in missing.text
    written = run_tool(box, "file_write", path="sub/\udfff.txt", content="replaced\n")
    assert written.status == "success", written.text
    assert (box.ws / "sub" / "\ufffd.txt").read_text() == "replaced\n"
    assert "replaced" in run_tool(box, "file_read", path="sub/\ud800.txt").text


def test_a_lone_surrogate_given_to_the_workspace_directly_is_an_invalid_path(box: Box) -> None:
    # A caller that bypasses the JSON arguments still cannot hand the OS an unencodable name.
    with pytest.raises(PathRefused) as refused:
        Workspace(box.ws).resolve("sub/\ud800")
    assert refused.value.code == "invalid_path"


WRITE_VECTORS: list[tuple[str, Plant, str | Callable[[Box], str], set[str]]] = [
    ("dotdot", nothing, "../outside/new.txt", {"outside_workspace"}),
    ("absolute", nothing, lambda b: str(b.outside / "new.txt"), {"outside_workspace"}),
    (
        "dangling-link",
        link("d.txt", lambda b: b.outside / "new.txt"),
        "d.txt",
        {"outside_workspace"},
    ),
    (
        "relative-dangling-link",
        link("d.txt", lambda b: "../outside/new.txt"),
        "d.txt",
        {"outside_workspace"},
    ),
    (
        "link-to-secret",
        link("l.txt", lambda b: b.outside / "secret.txt"),
        "l.txt",
        {"outside_workspace"},
    ),
    ("dir-link", link("ld", lambda b: b.outside / "dir"), "ld/new.txt", {"outside_workspace"}),
    (
        "dir-link-new-subdir",
        link("ld", lambda b: b.outside / "dir"),
        "ld/made/new.txt",
        {"outside_workspace"},
    ),
    ("hard-link", hard_link, "hard.txt", {"hard_link"}),
    ("hard-link-session-log", hard_link_to_session_log, "log.jsonl", {"hard_link"}),
    ("fifo", fifo, "fifo", {"special_file"}),
    ("socket", unix_socket, "sock", {"special_file"}),
    ("session-log", nothing, session_path("session.jsonl"), {"reserved_path"}),
    ("session-new-file", nothing, session_path("evil.md"), {"reserved_path"}),
    ("artifact", nothing, session_path("artifacts", "a.txt"), {"reserved_path"}),
    ("engine-dir-new-folder", nothing, ".contextengine/made/x.txt", {"reserved_path"}),
    (
        "link-to-session-log",
        link("s.jsonl", lambda b: b.session / "session.jsonl"),
        "s.jsonl",
        {"reserved_path"},
    ),
    ("nul-byte", nothing, "ok.txt\0", {"invalid_path"}),
    ("long-name", nothing, "y" * 300, {"invalid_path"}),
]


@pytest.mark.parametrize("tool", ["file_write", "file_edit", "file_delete"])
@pytest.mark.parametrize(
    ("plant", "path", "codes"), [v[1:] for v in WRITE_VECTORS], ids=[v[0] for v in WRITE_VECTORS]
)
def test_writes_never_land_outside_or_in_the_session(
    box: Box, tool: str, plant: Plant, path: Any, codes: set[str]
) -> None:
    plant(box)
    path = path(box) if callable(path) else path
    before = box.snapshot()
    if tool == "file_write":
        outcome = run_tool(box, tool, path=path, content="PWNED\n")
    elif tool == "file_delete":
        outcome = run_tool(box, tool, path=path)
    else:
        outcome = run_tool(box, tool, path=path, old_text="e", new_text="PWNED", replace_all=True)
    assert outcome.status == "error", outcome.text
    assert outcome.error is not None
    assert outcome.error.code in codes | {"not_found"}, outcome.error
    if tool == "file_write":
        assert outcome.error.code in codes, outcome.error
    assert_nothing_escaped(box, before, outcome)
    assert not (box.ws / ".contextengine" / "made").exists()


@pytest.mark.parametrize(
    "pattern",
    [
        "../../../../usr/**",
        "../*",
        "../outside/*",
        "sub/../../outside/*",
        "/etc/*",
        "ld/*",
        "ld/**",
        "**/secret.txt",
        "**/*",
        ".contextengine/**",
        "**/session.jsonl",
        "*/*/*/*/*/*/*",
    ],
)
def test_glob_stays_in_the_workspace_and_out_of_the_session(box: Box, pattern: str) -> None:
    (box.ws / "ld").symlink_to(box.outside / "dir")
    before = box.snapshot()
    outcome = run_tool(box, "file_glob", pattern=pattern)
    assert_nothing_escaped(box, before, outcome)
    matches = outcome.data.get("matches", [])
    assert not [m for m in matches if "secret" in m or m.startswith((".contextengine", "ld/"))]
    if ".." in pattern or pattern.startswith("/"):
        assert outcome.status == "error"


@pytest.mark.parametrize("path", [".", "sub", "ld", ".contextengine", "in"])
def test_grep_of_a_folder_follows_no_link_out_and_skips_the_session(box: Box, path: str) -> None:
    (box.ws / "ld").symlink_to(box.outside / "dir")
    (box.ws / "l.txt").symlink_to(box.outside / "secret.txt")
    (box.ws / "in").symlink_to(box.ws / "sub")
    os.mkfifo(box.ws / "sub" / "fifo")
    (box.ws / "sub" / "plan-link").symlink_to(box.session / "task_plan.md")
    before = box.snapshot()
    outcome = run_tool(box, "file_grep", pattern="SECRET|Plan|header|artifact", path=path)
    assert_nothing_escaped(box, before, outcome)
    assert outcome.data.get("matches", []) == []


def test_ls_of_the_root_hides_the_engine_folder(box: Box) -> None:
    outcome = run_tool(box, "file_ls", path=".")
    assert ".contextengine" not in [e["name"] for e in outcome.data["entries"]]


def test_the_session_files_the_prompt_names_stay_usable(box: Box) -> None:
    plan = session_path("task_plan.md")
    assert run_tool(box, "file_read", path=plan).status == "success"
    edited = run_tool(box, "file_edit", path=plan, old_text="# Plan", new_text="# Plan\nGoal")
    assert edited.status == "success"
    assert run_tool(box, "file_read", path=session_path("artifacts", "a.txt")).status == "success"
    (box.ws / "inner").symlink_to("sub/inside.txt")
    assert "inside text" in run_tool(box, "file_read", path="inner").text
    assert run_tool(box, "file_write", path="inner", content="new\n").status == "success"
    assert (box.ws / "sub" / "inside.txt").read_text() == "new\n"


# --- the swap race ----------------------------------------------------------------------

SWAPPER = """
import itertools, os, sys, time
ws, outside, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
sub, parked = os.path.join(ws, "sub"), os.path.join(ws, "parked")
count = itertools.count()

def clear(path):
    # Moved aside, not deleted: file_write may be re-creating the folder meanwhile.
    try:
        os.rename(path, os.path.join(ws, f"trash{next(count)}"))
    except FileNotFoundError:
        pass

def put(make):
    while True:
        try:
            return make()
        except OSError:
            clear(sub)

open(os.path.join(ws, "swapper-started"), "w").close()
end = time.monotonic() + seconds
while time.monotonic() < end:
    os.rename(sub, parked)
    put(lambda: os.symlink(outside, sub))
    clear(sub)
    put(lambda: os.rename(parked, sub))
"""


@pytest.mark.timeout(60)
def test_a_folder_swapped_for_a_symlink_mid_call_never_lets_a_call_out(box: Box) -> None:
    (box.outside / "dir" / "inside.txt").write_text(f"{SECRET}\n")
    before = box.snapshot()
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(box.ws), str(box.outside / "dir"), "20"]
    )
    try:
        while not (box.ws / "swapper-started").exists():
            time.sleep(0.01)
        results: dict[str, int] = {}
        for i in range(3000):
            if i % 2:
                outcome = run_tool(box, "file_read", path="sub/inside.txt")
            else:
                outcome = run_tool(box, "file_write", path="sub/w.txt", content=f"{i}\n")
            assert SECRET not in outcome.text
            key = outcome.error.code if outcome.error else "ok"
            results[key] = results.get(key, 0) + 1
        assert swapper.poll() is None, "the swapper stopped early"
    finally:
        swapper.kill()
        swapper.wait()
    assert box.snapshot() == before, "a call reached the outside folder"
    assert not (box.outside / "dir" / "w.txt").exists()
    # Both states were met, so the race was real: calls got through and calls were refused.
    assert results.get("ok", 0) > 0
    assert sum(n for code, n in results.items() if code != "ok") > 0, results


# --- L2 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plant", "expected"),
    [
        (lambda b: (b.ws / "CODE_LAW.md").symlink_to(b.outside / "secret.txt"), None),
        (lambda b: (b.ws / "code_law.md").symlink_to("../outside/secret.txt"), None),
        (lambda b: (b.ws / "CODE_LAW.md").symlink_to(b.outside / "missing.md"), None),
        (lambda b: os.mkfifo(b.ws / "CODE_LAW.md"), None),
        (lambda b: (b.ws / "CODE_LAW.md").symlink_to("/dev/zero"), None),
        (lambda b: (b.ws / "CODE_LAW.md").mkdir(), None),
        (lambda b: (b.ws / "CODE_LAW.md").symlink_to("sub/inside.txt"), "inside text\n"),
    ],
    ids=["abs-link", "rel-link", "dangling-link", "fifo", "device", "folder", "inside-link"],
)
def test_code_law_reads_only_a_regular_file_inside_the_project(
    box: Box, plant: Plant, expected: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    plant(box)
    found = CodeLawReader(box.ws).read()
    assert (found[1] if found else None) == expected
    assert SECRET not in caplog.text


# --- the server's routes ----------------------------------------------------------------


@pytest.fixture
def served(box: Box) -> Iterator[tuple[TestClient, str, Path]]:
    """A client with the API token (on an allowed host), a session id and its folder."""
    app = create_app(box.ws, lambda: ScriptedProvider([{"content": "ok"}]), Config())
    auth = {"Authorization": f"Bearer {app.state.token}"}
    with TestClient(app, base_url="http://127.0.0.1", headers=auth) as client:
        sid = client.post("/api/sessions").json()["id"]
        folder = app.state.store.directory(sid)
        (folder / "artifacts").mkdir(exist_ok=True)
        (folder / "artifacts" / "ok.txt").write_text("fine\n")
        yield client, sid, folder


@pytest.mark.parametrize(
    ("plant", "route", "status"),
    [
        (lambda f, o: (f / "artifacts" / "s.txt").symlink_to(o / "secret.txt"), "s.txt", 403),
        (lambda f, o: (f / "artifacts" / "d").symlink_to(o / "dir"), "d/secret.txt", 403),
        (lambda f, o: (f / "artifacts" / "j").symlink_to(f / "session.jsonl"), "j", 403),
        (lambda f, o: os.mkfifo(f / "artifacts" / "fifo"), "fifo", 403),
        (lambda f, o: None, "..%2Fsession.jsonl", 403),
        (lambda f, o: None, "%2Fetc%2Fpasswd", 403),
        (lambda f, o: None, "ok.txt%00", 400),
        (lambda f, o: None, "x" * 300, 400),
    ],
    ids=["file-link", "dir-link", "session-log-link", "fifo", "dotdot", "absolute", "nul", "long"],
)
def test_artifact_route_serves_no_link_and_nothing_outside(
    served: tuple[TestClient, str, Path],
    box: Box,
    plant: Callable[[Path, Path], None],
    route: str,
    status: int,
) -> None:
    client, sid, folder = served
    plant(folder, box.outside)
    response = client.get(f"/api/sessions/{sid}/artifacts/{route}")
    assert response.status_code == status, response.text
    assert SECRET not in response.text
    listing = client.get(f"/api/sessions/{sid}/artifacts").json()["artifacts"]
    assert [a["path"] for a in listing] == ["ok.txt"]


def test_a_planted_artifacts_symlink_is_not_served(
    served: tuple[TestClient, str, Path], box: Box
) -> None:
    client, sid, folder = served
    (folder / "artifacts").rename(folder / "real-artifacts")
    (folder / "artifacts").symlink_to(box.outside)
    assert client.get(f"/api/sessions/{sid}/artifacts").json() == {"artifacts": []}
    response = client.get(f"/api/sessions/{sid}/artifacts/secret.txt")
    assert response.status_code == 403
    assert SECRET not in response.text


@pytest.mark.parametrize("kind", ["link-out", "link-in", "fifo"])
def test_memory_routes_serve_only_regular_files(
    served: tuple[TestClient, str, Path], box: Box, kind: str
) -> None:
    client, sid, folder = served
    (folder / "progress.md").unlink(missing_ok=True)
    if kind == "link-out":
        (folder / "progress.md").symlink_to(box.outside / "secret.txt")
    elif kind == "link-in":
        (folder / "progress.md").symlink_to(folder / "session.jsonl")
    else:
        os.mkfifo(folder / "progress.md")
    one = client.get(f"/api/sessions/{sid}/memory/progress.md")
    assert one.status_code == 403
    assert client.get(f"/api/sessions/{sid}/memory").status_code == 403
    assert SECRET not in one.text
