"""Server replicas and workers as real processes on one machine, for the workers tests."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from server.live import Sse, parse_sse

CLI = [sys.executable, "-c", "from contextengine.cli import main; main()"]
STARTUP_S = 60.0

# Every turn: list the workspace (a tool call), then answer.
TURN_SCRIPT: list[dict[str, Any]] = [
    {"content": "Let me look around.", "tool_calls": [{"name": "file_ls", "arguments": {}}]},
    {"content": "Done: the workspace is listed and nothing else was needed."},
]


def sleeping_script(seconds: float) -> list[dict[str, Any]]:
    """Every turn: a tool call that sleeps ``seconds`` (a kill can land in it), then answer."""
    command = f"sleep {seconds}"
    call = {"name": "shell_exec", "arguments": {"command": command}}
    return [{"content": "Running the command.", "tool_calls": [call]}, TURN_SCRIPT[-1]]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {k: v for k, v in env.items() if not k.startswith("CONTEXTENGINE_")}


@dataclass
class Process:
    """A started CLI process whose output goes to ``log``."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first match of ``pattern`` in the log; fails with the log when it exits."""
        deadline = time.monotonic() + STARTUP_S
        while True:
            text = self.log.read_text(errors="replace") if self.log.is_file() else ""
            found = re.search(pattern, text)
            if found:
                return found
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{text[-3000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no clean-up, no acknowledgement."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Cluster:
    """Replicas and workers sharing one PostgreSQL store, one Redis broker, one workspace."""

    folder: Path
    store: str
    broker: str
    processes: list[Process] = field(default_factory=list)

    @property
    def workspace(self) -> Path:
        """The workspace every replica serves (and so every session works in)."""
        path = self.folder / "workspace"
        path.mkdir(exist_ok=True)
        return path

    def _start(self, name: str, *args: str) -> Process:
        log = self.folder / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [*CLI, *args, "--store", self.store, "--broker", self.broker],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_env(),
                cwd=self.folder,
            )
        started = Process(name, process, log)
        self.processes.append(started)
        return started

    def worker(
        self,
        name: str,
        concurrency: int = 4,
        redelivery_s: float = 3.0,
        script: list[dict[str, Any]] = TURN_SCRIPT,
    ) -> Process:
        """A worker answering every turn with ``script``, ready to take turns."""
        script_file = self.folder / f"{name}-script.json"
        script_file.write_text(json.dumps(script))
        config = self.folder / f"{name}.toml"
        config.write_text(f"worker_redelivery_s = {redelivery_s}\n")
        started = self._start(
            name,
            "worker",
            "--provider",
            f"scripted:{script_file}",
            "--concurrency",
            str(concurrency),
            "--config",
            str(config),
        )
        started.wait_for(r"ready\.")
        return started

    def replica(self, name: str) -> Replica:
        """A server replica on a free port."""
        started = self._start(
            name, "serve", "--port", "0", "--workspace", str(self.workspace), "-p", "ollama",
            "-m", "m",
        )  # fmt: skip
        found = started.wait_for(r"open (http://127\.0\.0\.1:\d+)/\?token=(\S+)")
        return Replica(started, found.group(1), found.group(2))

    def stop(self) -> None:
        """Stop every process."""
        for process in self.processes:
            process.stop()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Replica:
    """A running server replica: its URL and token."""

    process: Process
    url: str
    token: str

    def client(self) -> httpx.Client:
        """An HTTP client that sends the token."""
        return httpx.Client(
            base_url=self.url, timeout=120, headers={"Authorization": f"Bearer {self.token}"}
        )


def post_turn(
    client: httpx.Client,
    session_id: str,
    message: str,
    on_line: Callable[[str], None] = lambda line: None,
) -> list[Sse]:
    """Send a message and read the turn's SSE stream to its end (each line to ``on_line``
    as it arrives)."""
    with client.stream(
        "POST", f"/api/sessions/{session_id}/messages", json={"message": message}
    ) as response:
        assert response.status_code == 200, response.read()
        lines = []
        for line in response.iter_lines():
            on_line(line)
            lines.append(line)
        return parse_sse(lines)
