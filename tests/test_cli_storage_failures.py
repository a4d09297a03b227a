"""A store or a disk that fails mid-turn: the CLI says what failed (the store, the path) in
one line and exits 2; no traceback, no driver exception, no bare ``OSError``."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support.postgres import Postgres

SRC = Path(__file__).resolve().parents[1] / "src"
FILE_SIZE_LIMIT = 64 * 1024  # bytes any file this process writes may reach


def _cli(
    tmp_path: Path, script: list[dict[str, Any]], *args: str, limit: int | None = None
) -> subprocess.Popen[str]:
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTENGINE_")}
    env["PYTHONPATH"] = str(SRC)

    def limit_file_size() -> None:
        if limit is not None:  # the kernel refuses bytes past it: EFBIG, as a full disk does
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.Popen(
        [sys.executable, "-m", "contextengine", "run", "Go.", "-p", f"scripted:{script_file}",
         "-w", str(workspace), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=limit_file_size,
    )  # fmt: skip


def _one_line_error(process: subprocess.Popen[str]) -> str:
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stderr
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_disk_that_refuses_the_session_log_is_one_line_naming_the_file(
    tmp_path: Path,
) -> None:
    big = "a long answer. " * (FILE_SIZE_LIMIT // 8)
    process = _cli(tmp_path, [{"content": big}], limit=FILE_SIZE_LIMIT)
    line = _one_line_error(process)
    assert "cannot write (File too large)" in line, line
    assert str(tmp_path / "workspace") in line and "session.jsonl" in line, line


@pytest.mark.slow
def test_postgresql_stopped_mid_turn_is_one_line_naming_the_store(
    postgres: Postgres, tmp_path: Path
) -> None:
    store = postgres.new_database("cli_store_gone")
    call = {"name": "shell_exec", "arguments": {"command": "echo started; sleep 3"}}
    script = [{"content": "Running it.", "tool_calls": [call]}, {"content": "All done here."}]
    process = _cli(tmp_path, script, "--store", store)
    assert process.stdout is not None
    seen = threading.Event()

    def watch() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if "sleep 3" in line:
                seen.set()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    assert seen.wait(60), "the tool call never started"
    postgres.restart(down_s=8.0)  # down past the command's end: the turn's next write fails
    started = time.monotonic()
    line = _one_line_error(process)
    assert time.monotonic() - started < 60
    assert line.startswith("contextengine: error: store postgresql://postgres@127.0.0.1:"), line
    assert "psycopg" not in line, line
