"""`contextengine serve` as a real process: it serves the API and the UI, or fails clearly."""

from __future__ import annotations

import os
import queue
import re
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


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """Start `contextengine serve` on a free port; yield its base URL."""
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--workspace", str(tmp_path), "-p", "ollama", "-m", "m"],
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
    try:
        seen = []
        while True:
            line = lines.get(timeout=STARTUP_S)
            seen.append(line)
            found = re.search(r"running on (http://127\.0\.0\.1:\d+)", line)
            if found:
                yield found.group(1)
                break
            assert process.poll() is None, "".join(seen)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_serve_runs_the_api_and_the_ui(served: str, tmp_path: Path) -> None:
    with httpx.Client(base_url=served, timeout=10) as client:
        assert client.get("/").status_code == 200
        assert client.get("/api/sessions").json() == {
            "workspace": str(tmp_path.resolve()),
            "sessions": [],
        }
        created = client.post("/api/sessions")
        assert created.status_code == 201
        assert created.json()["model"] == "m"


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
