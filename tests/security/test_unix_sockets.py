"""A sandboxed command cannot reach a unix-domain socket in the workspace (seccomp).

A real unix-socket server listens in the workspace, as a dev database or a git fsmonitor
would; the unsandboxed control connects to it, the sandboxed command cannot, by any way
of asking for such a socket (the plain call, the family with high bits set, io_uring).
"""

from __future__ import annotations

import contextlib
import json
import platform
import shlex
import shutil
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextengine import Config
from contextengine.toolkit import unix_sockets
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.sandbox import SandboxPolicy
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed"),
]

CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
print(s.recv(16).decode().strip())
"""


@contextlib.contextmanager
def pong_server(path: Path) -> Iterator[Path]:
    """A unix-socket server at ``path`` that answers every connection with ``pong``."""

    class Pong(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(b"pong\n")

    path.parent.mkdir(parents=True, exist_ok=True)
    with socketserver.ThreadingUnixStreamServer(str(path), Pong) as listening:
        thread = threading.Thread(target=listening.serve_forever, daemon=True)
        thread.start()
        yield path
        listening.shutdown()


@pytest.fixture
def server(root: Path) -> Iterator[Path]:
    """A unix-socket server in the workspace, as a dev database or a git fsmonitor would run."""
    with pong_server(root / "db.sock") as path:
        yield path


def shell(root: Path, command: str, policy: SandboxPolicy | None) -> ToolOutcome:
    ctx = ToolContext(Workspace(root), sandbox=policy)
    call = ToolCall("c1", "shell_exec", json.dumps({"command": command}))
    return default_toolset().execute(call, ctx)


def python(code: str, *args: str) -> str:
    return " ".join(["python3", "-c", shlex.quote(code), *args])


def test_the_unsandboxed_control_connects(root: Path, server: Path) -> None:
    out = shell(root, python(CLIENT, server.name), None)
    assert out.data["stdout"].strip() == "pong"


def test_a_sandboxed_command_cannot_connect(root: Path, server: Path) -> None:
    out = shell(root, python(CLIENT, server.name), SandboxPolicy())
    assert "pong" not in out.data["stdout"]
    assert "PermissionError" in out.data["stderr"]
    absolute = shell(root, python(CLIENT, str(server)), SandboxPolicy())
    assert "pong" not in absolute.data["stdout"]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64 system call numbers")
def test_raw_system_calls_cannot_make_a_unix_socket_either(root: Path, server: Path) -> None:
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for label, number, args in [
    ("high bits", 41, (ctypes.c_ulong(0x1_0000_0001), 1, 0)),
    ("io_uring", 425, (8, ctypes.c_void_p(0))),
]:
    result = libc.syscall(number, *args)
    print(label, result, os.strerror(ctypes.get_errno()) if result < 0 else "made")
"""
    out = shell(root, python(code), SandboxPolicy())
    assert out.data["stdout"].splitlines() == [
        "high bits -1 Operation not permitted",
        "io_uring -1 Operation not permitted",
    ]


def test_other_sockets_are_still_made(root: Path) -> None:
    code = "import socket; socket.socket(socket.AF_INET); socket.socketpair(); print('ok')"
    out = shell(root, python(code), SandboxPolicy())
    assert out.data["stdout"].strip() == "ok"


def test_unix_sockets_when_configured(root: Path, server: Path) -> None:
    policy = SandboxPolicy.from_config(Config(sandbox_unix_sockets=True))
    assert policy is not None and policy.unix_sockets
    out = shell(root, python(CLIENT, server.name), policy)
    assert out.data["stdout"].strip() == "pong"
    default = SandboxPolicy.from_config(Config())
    assert default is not None and not default.unix_sockets


def test_named_sockets_are_reached_and_every_other_one_in_the_workspace_is_not(
    root: Path, server: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("run") / "agent.sock"
    with pong_server(root / "sub" / "git.sock") as other, pong_server(outside):
        policy = SandboxPolicy.from_config(Config(sandbox_unix_sockets=["db.sock", str(outside)]))
        assert policy is not None and policy.unix_socket_paths == ("db.sock", str(outside))
        assert not policy.unix_sockets
        for named in (server.name, str(outside)):
            assert shell(root, python(CLIENT, named), policy).data["stdout"].strip() == "pong"
        refused = shell(root, python(CLIENT, str(other)), policy)
        assert "pong" not in refused.data["stdout"]
        assert "ConnectionRefusedError" in refused.data["stderr"]
        # the unsandboxed control: the masked one does answer
        assert shell(root, python(CLIENT, str(other)), None).data["stdout"].strip() == "pong"


def test_a_workspace_too_big_to_search_for_sockets_is_refused(
    root: Path, server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(5):
        (root / f"f{n}.txt").write_text("x")
    monkeypatch.setattr(unix_sockets, "MAX_SCAN_ENTRIES", 3)
    policy = SandboxPolicy.from_config(Config(sandbox_unix_sockets=["db.sock"]))
    out = shell(root, python(CLIENT, server.name), policy)
    assert out.error is not None and "too many to find the unix sockets" in out.error.message
