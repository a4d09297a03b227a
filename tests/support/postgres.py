"""A throwaway PostgreSQL server for tests: Debian's binaries, initdb + pg_ctl in a temp dir.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` OS user
(``nobody`` when there is none) through ``runuser``, with its folder handed to that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

MAX_CONNECTIONS = 300  # the default 100 is less than the cluster tests hold at once


@dataclass(frozen=True)
class Postgres:
    """A running server: its ``postgresql://`` URL and the folder it lives in."""

    url: str
    folder: Path
    run_as: tuple[str, ...]
    options: str = ""  # the server's command-line options, for a restart

    def new_database(self, name: str) -> str:
        """Create database ``name``; its URL."""
        self._run(
            "psql",
            "-q",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-c",
            f'CREATE DATABASE "{name}"',
        )
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def restart(self, down_s: float = 0.0) -> None:
        """Stop the server at once (every connection cut, as in a crash), stay down
        ``down_s`` seconds, then start it again on the same port with the same data."""
        data = str(self.folder / "data")
        self._run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        time.sleep(down_s)
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", data, "-o", self.options, "-l", log, "-w", "start")

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        _run([*self.run_as, _binary(tool), *args])


def start_postgres(folder: Path, fsync: bool = False) -> Postgres:
    """initdb and start a server in ``folder`` on a free port; raises with its log if it
    does not start. ``fsync`` off (tests) trades durability nobody needs here for speed."""
    run_as = _run_as()
    folder.mkdir(parents=True, exist_ok=True)
    if run_as:
        user = pwd.getpwnam(run_as[-2])
        os.chown(folder, user.pw_uid, user.pw_gid)
    data, log = folder / "data", folder / "server.log"
    _run(
        [
            *run_as,
            _binary("initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
        ]
    )
    port = _free_port()
    # Each open session holds a connection on its replica and one on its worker: the
    # cluster tests run 50 sessions at once, over the default limit of 100 when turns overlap.
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync={'on' if fsync else 'off'}"
        f" -c max_connections={MAX_CONNECTIONS}"
    )
    try:
        _run(
            [
                *run_as,
                _binary("pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
    except RuntimeError as exc:
        text = log.read_text(errors="replace") if log.is_file() else ""
        raise RuntimeError(f"{exc}\n{text[-2000:]}") from None
    return Postgres(f"postgresql://postgres@127.0.0.1:{port}/postgres", folder, run_as, options)


def _run_as() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        return ("runuser", "-u", user, "--")
    raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


def _binary(tool: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"), key=_version)
    if found:
        return found[-1]
    on_path = shutil.which(tool)
    if on_path is None:
        raise RuntimeError(f"PostgreSQL's {tool} not found (apt-get install postgresql)")
    return on_path


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()[-2000:]}")
