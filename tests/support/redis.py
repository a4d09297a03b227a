"""A throwaway Redis server for tests: Debian's redis-server on a free port in a temp dir."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 20.0


@dataclass
class Redis:
    """A running server: its ``redis://`` URL, folder and process (a new one on restart)."""

    url: str
    folder: Path
    process: subprocess.Popen[bytes]

    def database(self, number: int) -> str:
        """The URL of database ``number`` (tests that share the server keep apart this way)."""
        return self.url.rsplit("/", 1)[0] + f"/{number}"

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def restart(self, down_s: float = 0.0, save: bool = True) -> None:
        """Stop the server (every client cut off), stay down ``down_s`` seconds, then start
        it again on the same port: with its data when ``save`` (as a persistent one does),
        else empty (as one without persistence, or one that crashed, comes back)."""
        if not save:
            (self.folder / "dump.rdb").unlink(missing_ok=True)
        command = b"SHUTDOWN SAVE\r\n" if save else b"SHUTDOWN NOSAVE\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(command)
            sock.recv(16)  # the server closes the connection once it has saved
        self.process.wait(timeout=30)
        time.sleep(down_s)
        self.process = _launch(self.folder, self.port)

    def stop(self) -> None:
        """Stop the server and remove its folder."""
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_redis(folder: Path) -> Redis:
    """Start redis-server in ``folder`` on a free port (no persistence); raises with its log
    when it does not answer."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(binary).is_file():
        raise RuntimeError("redis-server not found (apt-get install redis-server)")
    folder.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    return Redis(f"redis://127.0.0.1:{port}/0", folder, _launch(folder, port))


def _launch(folder: Path, port: int) -> subprocess.Popen[bytes]:
    """redis-server on ``port`` with its data in ``folder``, once it answers."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    log = folder / "redis.log"
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder),
         "--save", "", "--appendonly", "no", "--logfile", str(log)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            text = log.read_text(errors="replace") if log.is_file() else ""
            raise RuntimeError(f"redis-server did not start\n{text[-2000:]}")
        time.sleep(0.05)
    return process


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
