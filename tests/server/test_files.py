"""Working-memory and artifact endpoints, and paths that try to leave the session folder."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from contextengine.server.files import MEMORY_FILES, PREVIEW_BYTES, PREVIEW_LINES

from .live import post_turn


@pytest.fixture
def session(client: httpx.Client) -> tuple[str, Path]:
    """A session that ran the scripted turn: its id and folder."""
    sid = client.post("/api/sessions").json()["id"]
    done = post_turn(client, sid, "Write notes.txt, then print a long line.")[-1]
    return sid, Path(done.data["result"]["session_dir"])


def raw_get(client: httpx.Client, path: str) -> tuple[int, dict]:
    """GET a path exactly as written (no client-side normalization of ``..``)."""
    url = urlsplit(str(client.base_url))
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": client.headers["authorization"]})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_memory_lists_the_three_files_as_they_are_on_disk(
    client: httpx.Client, session: tuple[str, Path]
) -> None:
    sid, folder = session
    on_disk = {
        name: (folder / name).read_text() if (folder / name).exists() else None
        for name in MEMORY_FILES
    }
    files = client.get(f"/api/sessions/{sid}/memory").json()["files"]
    assert [f["name"] for f in files] == ["task_plan.md", "findings.md", "progress.md"]
    assert {f["name"]: f["content"] for f in files} == on_disk

    (folder / "task_plan.md").write_text("# Plan\n- [x] write notes\n", encoding="utf-8")
    files = client.get(f"/api/sessions/{sid}/memory").json()["files"]
    assert files[0] == {"name": "task_plan.md", "content": "# Plan\n- [x] write notes\n"}
    one = client.get(f"/api/sessions/{sid}/memory/task_plan.md")
    assert one.json() == {"name": "task_plan.md", "content": "# Plan\n- [x] write notes\n"}


def test_a_memory_file_not_written_yet_is_a_404(
    client: httpx.Client, session: tuple[str, Path]
) -> None:
    sid, folder = session
    (folder / "findings.md").unlink(missing_ok=True)
    response = client.get(f"/api/sessions/{sid}/memory/findings.md")
    assert response.status_code == 404
    assert response.json() == {"error": "findings.md has not been written in this session yet"}
    files = client.get(f"/api/sessions/{sid}/memory").json()["files"]
    assert files[1] == {"name": "findings.md", "content": None}


def test_only_the_three_memory_names_are_served(
    client: httpx.Client, session: tuple[str, Path]
) -> None:
    sid, _ = session
    for name in ("session.jsonl", "usage.jsonl", "...", "task_plan.md.bak"):
        response = client.get(f"/api/sessions/{sid}/memory/{name}")
        assert response.status_code == 404
        assert response.json()["error"] == (
            f"unknown memory file {name!r}; known: task_plan.md, findings.md, progress.md"
        )
    # A name with a slash matches no route at all.
    response = client.get(f"/api/sessions/{sid}/memory/..%2Fsession.json")
    assert response.status_code == 404
    assert "error" in response.json()


def test_a_memory_file_symlinked_outside_the_session_is_refused(
    client: httpx.Client, session: tuple[str, Path], tmp_path: Path
) -> None:
    sid, folder = session
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    (folder / "progress.md").unlink(missing_ok=True)
    (folder / "progress.md").symlink_to(secret)
    response = client.get(f"/api/sessions/{sid}/memory/progress.md")
    assert response.status_code == 403
    assert "outside the session folder" in response.json()["error"]
    assert client.get(f"/api/sessions/{sid}/memory").status_code == 403


def test_artifacts_are_listed_and_read(client: httpx.Client, session: tuple[str, Path]) -> None:
    sid, folder = session
    listing = client.get(f"/api/sessions/{sid}/artifacts").json()["artifacts"]
    on_disk = sorted(p for p in (folder / "artifacts").rglob("*") if p.is_file())
    assert [a["path"] for a in listing] == [p.name for p in on_disk]
    shell = next(a for a in listing if "shell_exec" in a["path"])

    body = client.get(f"/api/sessions/{sid}/artifacts/{shell['path']}").json()
    assert body["content"] == (folder / "artifacts" / shell["path"]).read_text()
    assert "x" * 4000 in body["content"]
    assert body["size"] == shell["size"]
    assert body["truncated"] is False
    assert body["binary"] is False
    head = body["content"][:PREVIEW_BYTES].splitlines()[:PREVIEW_LINES]
    assert shell["preview"] == "\n".join(head) and shell["preview"]


def test_nested_and_binary_artifacts(client: httpx.Client, session: tuple[str, Path]) -> None:
    sid, folder = session
    nested = folder / "artifacts" / "web" / "page one.html"
    nested.parent.mkdir()
    nested.write_text("<p>hi</p>")
    (folder / "artifacts" / "blob.bin").write_bytes(b"\x00\x01\x02")
    lines = [f"line {n}" for n in range(PREVIEW_LINES * 2)]
    (folder / "artifacts" / "long.txt").write_text("\n".join(lines))

    listing = client.get(f"/api/sessions/{sid}/artifacts").json()["artifacts"]
    previews = {a["path"]: a["preview"] for a in listing}
    assert previews["web/page one.html"] == "<p>hi</p>"
    assert previews["blob.bin"] is None, "no preview of a binary file"
    assert previews["long.txt"] == "\n".join(lines[:PREVIEW_LINES])
    page = client.get(f"/api/sessions/{sid}/artifacts/web/page%20one.html").json()
    assert page["content"] == "<p>hi</p>"
    blob = client.get(f"/api/sessions/{sid}/artifacts/blob.bin").json()
    assert blob == {
        "path": "blob.bin",
        "size": 3,
        "content": None,
        "truncated": False,
        "binary": True,
    }


def test_a_missing_artifact_is_a_404(client: httpx.Client, session: tuple[str, Path]) -> None:
    sid, _ = session
    response = client.get(f"/api/sessions/{sid}/artifacts/nope.txt")
    assert response.status_code == 404
    assert response.json() == {"error": "no artifact 'nope.txt' in this session"}


@pytest.mark.parametrize(
    "path",
    [
        "..%2Fsession.jsonl",
        "%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/%2E%2E/etc/passwd",
        "sub/..%2F..%2Fusage.jsonl",
        "%2Fetc%2Fpasswd",
    ],
)
def test_artifact_paths_leaving_the_artifacts_folder_are_refused(
    client: httpx.Client, session: tuple[str, Path], path: str
) -> None:
    sid, _ = session
    response = client.get(f"/api/sessions/{sid}/artifacts/{path}")
    assert response.status_code == 403
    assert "outside the session's artifacts" in response.json()["error"]


@pytest.mark.parametrize(
    "path", ["../session.jsonl", "../../../../../../etc/passwd", "/etc/passwd"]
)
def test_raw_dot_dot_paths_are_refused(
    client: httpx.Client, session: tuple[str, Path], path: str
) -> None:
    sid, _ = session
    status, body = raw_get(client, f"/api/sessions/{sid}/artifacts/{path}")
    assert status == 403
    assert "outside the session's artifacts" in body["error"]


def test_an_artifact_symlinked_outside_is_neither_listed_nor_served(
    client: httpx.Client, session: tuple[str, Path]
) -> None:
    sid, folder = session
    (folder / "artifacts" / "log.txt").symlink_to(folder / "session.jsonl")
    paths = [a["path"] for a in client.get(f"/api/sessions/{sid}/artifacts").json()["artifacts"]]
    assert "log.txt" not in paths
    response = client.get(f"/api/sessions/{sid}/artifacts/log.txt")
    assert response.status_code == 403


@pytest.mark.parametrize("sid", ["nope", "...", "default", "workspace"])
def test_an_unknown_session_is_a_404(client: httpx.Client, sid: str) -> None:
    for suffix in ("", "/memory", "/artifacts", "/usage", "/history"):
        response = client.get(f"/api/sessions/{sid}{suffix}")
        assert response.status_code == 404, suffix
        assert response.json()["error"].startswith(f"no session {sid!r} in workspace ")


def test_a_session_id_with_a_slash_matches_nothing(
    client: httpx.Client, session: tuple[str, Path]
) -> None:
    sid, _ = session
    status, body = raw_get(client, f"/api/sessions/../sessions/{sid}/usage")
    assert status == 404
    assert body == {"error": "Not Found"}
    response = client.get(f"/api/sessions/..%2F{sid}/usage")
    assert response.status_code == 404
