"""`contextengine serve` as a real process: it serves the API and the UI, or fails clearly."""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

CLI = [sys.executable, "-c", "from contextengine.cli import main; main()"]
STARTUP_S = 30


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {k: v for k, v in env.items() if not k.startswith("CONTEXTENGINE_")}


def start_serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, str]:
    """Start `contextengine serve` on a free port: the process, its base URL and token."""
    process = subprocess.Popen(
        [
            *CLI,
            "serve",
            "--port",
            "0",
            "--workspace",
            str(tmp_path),
            "-p",
            "ollama",
            "-m",
            "m",
            *extra,
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    try:
        while True:
            line = lines.get(timeout=STARTUP_S)
            seen.append(line)
            found = re.search(r"open (http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
            if found:
                return process, found.group(1), found.group(2)
            assert process.poll() is None, "".join(seen)
    except BaseException:
        process.terminate()
        process.wait(timeout=10)
        raise


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`contextengine serve` on a free port: its base URL and the token it printed."""
    process, url, token = start_serve(tmp_path)
    try:
        yield url, token
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_serve_runs_the_api_and_the_ui(served: tuple[str, str], tmp_path: Path) -> None:
    url, token = served
    with httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/").status_code == 200
        assert client.get("/api/sessions").status_code == 401
        client.headers["Authorization"] = f"Bearer {token}"
        assert client.get("/api/sessions").json() == {
            "workspace": str(tmp_path.resolve()),
            "sessions": [],
        }
        created = client.post("/api/sessions")
        assert created.status_code == 201
        assert created.json()["model"] == "m"


@pytest.mark.slow
def test_serve_loads_the_token_counter_before_it_prints_its_url(tmp_path: Path) -> None:
    # Loading the BPE tables costs a second or more of CPU; done during the first turn it
    # slowed every request served meanwhile (the load test's p99).
    process, _url, _token = start_serve(tmp_path)
    try:
        assert "bpe_openai/_bindings" in Path(f"/proc/{process.pid}/maps").read_text()
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_serve_takes_a_token_and_extra_host_names(tmp_path: Path) -> None:
    process, url, token = start_serve(tmp_path, "--token", "my-token-1", "--allow-host", "box.lan")
    try:
        assert token == "my-token-1"
        auth = {"Authorization": "Bearer my-token-1"}
        assert (
            httpx.get(f"{url}/api/sessions", headers={**auth, "Host": "box.lan"}).status_code == 200
        )
        assert (
            httpx.get(f"{url}/api/sessions", headers={**auth, "Host": "b.lan"}).status_code == 403
        )
    finally:
        process.terminate()
        process.wait(timeout=10)


def _serve_on(tmp_path: Path, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *CLI,
            "serve",
            "--port",
            str(port),
            "--workspace",
            str(tmp_path),
            "-p",
            "ollama",
            "-m",
            "m",
        ],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )


@pytest.mark.slow
def test_serve_on_a_port_it_cannot_use_fails_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _serve_on(tmp_path, port)
    assert done.returncode == 2
    assert done.stderr.startswith(f"contextengine: error: cannot listen on 127.0.0.1:{port}: ")
    assert done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_serve_on_a_port_out_of_range_fails_in_one_line(tmp_path: Path) -> None:
    done = _serve_on(tmp_path, 99999)
    assert done.returncode == 2
    assert done.stderr.startswith("contextengine: error: Invalid value for '--port'")
    assert "65535" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


@pytest.mark.slow
def test_serve_fails_at_once_without_an_api_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, "serve", "--workspace", str(tmp_path), "-p", "openai", "-m", "gpt-x"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("contextengine: error: ")
    assert "OPENAI_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr
