"""``shell_exec`` under the real bubblewrap sandbox: what a command can see, change and keep."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

import contextengine
from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.toolkit.sandbox import SandboxPolicy, confine
from contextengine.tools.context import ToolContext
from contextengine.types import ToolCall

HOME = os.path.expanduser("~")
KEYS = {"OPENAI_API_KEY": "sk-openai-LEAKED", "ANTHROPIC_API_KEY": "sk-ant-LEAKED"}


def _running(token: str) -> bool:
    """Whether any process on the host has ``token`` in its command line."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    return True
            except OSError:
                continue
    return False


def _eventually(condition: Callable[[], bool], within_s: float = 10.0) -> bool:
    """Whether ``condition`` holds at some point in the next ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _token() -> str:
    """A unique ``sleep`` duration, so its process can be found on the host."""
    return f"{1000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("TOPSECRET\n")
    return sibling


@pytest.fixture
def session_log(root: Path, run) -> Path:
    """A session log inside the workspace, hidden the way the agent hides its own."""
    log = root / ".contextengine" / "sessions" / "o" / "t" / "w" / "s" / "session.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text('{"kind": "SESSIONLOG"}\n')
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(hidden_paths=(str(root / ".contextengine"),)))
    return log


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with ``pong``."""

    class Pong(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.sendall(b"pong\n")

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Pong) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.server_address[1]
        server.shutdown()


def test_the_workspace_is_writable_at_its_real_path(root: Path, run) -> None:
    out = run("shell_exec", command="pwd; echo made > made.txt; mkdir -p sub && cd sub && pwd")
    assert out.status == "success"
    assert out.data["stdout"] == f"{root}\n{root}/sub\n"
    assert (root / "made.txt").read_text() == "made\n"


@pytest.mark.parametrize("target", ["/usr/escape.txt", "/etc/escape.txt", "/escape.txt"])
def test_writes_to_system_paths_fail(run, target: str) -> None:
    out = run("shell_exec", command=f"echo x > {target}")
    assert out.error.code == "nonzero_exit"
    assert "Read-only file system" in out.data["stderr"]
    assert not Path(target).exists()


def test_writes_beside_the_workspace_stay_in_the_sandbox(root: Path, run) -> None:
    out = run("shell_exec", command="echo x > ../escape.txt && cat ../escape.txt")
    assert not (root.parent / "escape.txt").exists()
    assert out.data["stdout"] in ("x\n", "")


def test_kernel_settings_are_read_only(run) -> None:
    out = run("shell_exec", command="test -w /proc/sys/kernel/core_pattern || echo read-only")
    assert out.data["stdout"] == "read-only\n"


def test_tmp_is_private(run) -> None:
    out = run("shell_exec", command="echo x > /tmp/private.txt && cat /tmp/private.txt")
    assert out.data["stdout"] == "x\n"
    assert not Path("/tmp/private.txt").exists()


@pytest.mark.parametrize("path", ["/root", HOME, "../sibling/secret.txt", "/home"])
def test_home_and_siblings_are_hidden(outside: Path, run, path: str) -> None:
    out = run("shell_exec", command=f"ls -A {path} && cat {path}")
    assert out.error.code == "nonzero_exit"
    assert "No such file or directory" in out.data["stderr"]
    assert "TOPSECRET" not in out.text


def test_parent_shows_only_the_workspace(root: Path, outside: Path, run) -> None:
    out = run("shell_exec", command="ls -A ..")
    assert out.data["stdout"] == f"{root.name}\n"


def test_session_folder_is_hidden_and_unwritable(session_log: Path, run) -> None:
    before = session_log.read_bytes()
    out = run("shell_exec", command="ls -A .contextengine; cat .contextengine/sessions/*/*/*/*/*")
    assert out.data["stdout"] == ""
    out = run("shell_exec", command=f"echo pwned >> {session_log}")
    assert out.error.code == "nonzero_exit"
    assert session_log.read_bytes() == before


def test_the_agent_hides_its_own_session_folder(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([]), tmp_path / "ws", Config())
    log = agent.session.layout.log
    assert log.is_relative_to(agent.workspace) and log.exists()
    before = log.read_bytes()
    command = f"cat {log}; echo pwned >> {log}; find . -name session.jsonl"
    call = ToolCall("c1", "shell_exec", json.dumps({"command": command}))
    out = agent.toolset.execute(call, agent.tool_context)
    assert "No such file or directory" in out.data["stderr"]
    assert out.data["stdout"] == ""
    assert log.read_bytes() == before


def test_no_provider_keys_in_the_sandbox_or_in_bwrap(
    root: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    out = run("shell_exec", command="env; cat /proc/1/environ | tr '\\0' '\\n'")
    assert out.status == "success"
    assert "LEAKED" not in out.text
    assert "PATH=/usr/local/sbin" in out.data["stdout"]
    confined = confine(SandboxPolicy(), ["true"], root)
    assert set(confined.env) == {"PATH", "HOME", "LANG", "TERM"}


def test_explicit_environment_is_passed_on(ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, env={"GREETING": "hello"})
    out = run("shell_exec", command="echo $GREETING $HOME")
    assert out.data["stdout"] == "hello /tmp\n"


CONNECT = (
    'python3 -c "import socket; '
    "print(socket.create_connection(('127.0.0.1', {port}), timeout=5).recv(9).decode().strip())\""
)


def test_network_is_off_by_default(echo_server: int, run) -> None:
    out = run("shell_exec", command=CONNECT.format(port=echo_server))
    assert out.error.code == "nonzero_exit"
    assert "ConnectionRefusedError" in out.data["stderr"]
    curl = run("shell_exec", command=f"curl -sS http://127.0.0.1:{echo_server}/")
    assert curl.error.code == "nonzero_exit"


def test_network_when_configured(ctx: ToolContext, echo_server: int, run) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(network=True))
    out = run("shell_exec", command=CONNECT.format(port=echo_server))
    assert out.status == "success"
    assert out.data["stdout"] == "pong\n"


def test_background_process_dies_with_the_call(run) -> None:
    token = _token()
    out = run("shell_exec", command=f"sleep {token} & echo started")
    assert out.status == "success"
    assert out.data["stdout"] == "started\n"
    assert "background process" not in out.text
    assert not _running(token)


def test_timeout_kills_the_whole_tree(run) -> None:
    first, second = _token(), _token()
    command = f"(setsid sleep {first} &); bash -c 'sleep {second}'"
    out = run("shell_exec", command=command, timeout_s=0.5)
    assert out.error.code == "timeout"
    assert not _running(first) and not _running(second)


CALLER = """
import json, sys
from pathlib import Path
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.toolkit.workspace import Workspace
from contextengine.types import ToolCall
call = ToolCall("c", "shell_exec", json.dumps({"command": sys.argv[2]}))
default_toolset().execute(call, ToolContext(Workspace(Path(sys.argv[1]))))
"""


def test_commands_die_with_contextengine(root: Path) -> None:
    token = _token()
    package = Path(contextengine.__file__).parent.parent
    caller = subprocess.Popen(
        [sys.executable, "-c", CALLER, str(root), f"sleep {token}"],
        env={**os.environ, "PYTHONPATH": str(package)},
    )
    try:
        assert _eventually(lambda: _running(f"sleep\0{token}"))
    finally:
        caller.kill()
        caller.wait()
    assert _eventually(lambda: not _running(token))


def test_memory_limit_stops_a_hog(ctx: ToolContext, run) -> None:
    hog = "python3 -c 'b = bytearray(256 * 1024 * 1024); print(len(b))'"
    assert run("shell_exec", command=hog).data["stdout"] == "268435456\n"
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(memory_mb=64))
    out = run("shell_exec", command=hog)
    assert out.error.code == "nonzero_exit"
    assert "MemoryError" in out.data["stderr"]


def test_cpu_limit_kills_a_spinner(ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(cpu_s=1))
    out = run("shell_exec", command="python3 -c 'while True: pass'", timeout_s=60)
    assert out.error.code == "nonzero_exit"
    assert out.data["exit_code"] == 128 + 9
    assert out.data["timed_out"] is False


def test_file_size_limit(root: Path, ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(file_size_mb=1))
    out = run("shell_exec", command="head -c 3000000 /dev/zero > big.bin")
    assert out.error.code == "nonzero_exit"
    assert (root / "big.bin").stat().st_size == 1024 * 1024


def test_extra_read_only_path_is_visible_not_writable(ctx: ToolContext, outside: Path, run) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(read_only_paths=(str(outside),)))
    assert run("shell_exec", command=f"cat {outside}/secret.txt").data["stdout"] == "TOPSECRET\n"
    out = run("shell_exec", command=f"echo changed > {outside}/secret.txt")
    assert "Read-only file system" in out.data["stderr"]
    assert (outside / "secret.txt").read_text() == "TOPSECRET\n"


def test_missing_extra_path_is_a_clear_error(ctx: ToolContext, tmp_path: Path, run) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(read_only_paths=(str(tmp_path / "nope"),)))
    out = run("shell_exec", command="true")
    assert out.error.code == "sandbox_unavailable"
    assert "sandbox_read_only_paths" in out.error.message


def test_opt_out_runs_unconfined(ctx: ToolContext, outside: Path, run) -> None:
    run.ctx = replace(run.ctx, sandbox=None)
    assert run("shell_exec", command="cat ../sibling/secret.txt").data["stdout"] == "TOPSECRET\n"


def test_opt_out_from_config_and_environment(tmp_path: Path) -> None:
    assert SandboxPolicy.from_config(Config()) == SandboxPolicy()
    assert SandboxPolicy.from_config(Config(sandbox=False)) is None
    env = {"CONTEXTENGINE_SANDBOX": "false"}
    assert SandboxPolicy.from_config(Config.load(env=env)) is None
    agent = Agent(ScriptedProvider([]), tmp_path / "ws", Config(sandbox=False))
    assert agent.tool_context.sandbox is None


def test_settings_reach_the_policy() -> None:
    env = {
        "CONTEXTENGINE_SANDBOX_NETWORK": "true",
        "CONTEXTENGINE_SANDBOX_READ_ONLY_PATHS": "/opt,/srv",
        "CONTEXTENGINE_SANDBOX_MEMORY_MB": "512",
        "CONTEXTENGINE_SANDBOX_CPU_S": "30",
        "CONTEXTENGINE_SANDBOX_FILE_SIZE_MB": "8",
        "CONTEXTENGINE_SANDBOX_BWRAP": "/usr/bin/bwrap",
    }
    policy = SandboxPolicy.from_config(Config.load(env=env), hidden_paths=[Path("/x")])
    assert policy == SandboxPolicy(True, ("/opt", "/srv"), ("/x",), 512, 30, 8, "/usr/bin/bwrap")


@pytest.mark.parametrize("bwrap", ["/nonexistent/bwrap", "/usr/bin/false"])
def test_unusable_bwrap_is_a_clear_error(ctx: ToolContext, root: Path, run, bwrap: str) -> None:
    run.ctx = replace(run.ctx, sandbox=SandboxPolicy(bwrap=bwrap))
    out = run("shell_exec", command="echo ran > ran.txt")
    assert out.status == "error" and out.error.code == "sandbox_unavailable"
    message = out.error.message
    assert "\n" not in message and bwrap in message
    assert "sandbox = false" in message and "CONTEXTENGINE_SANDBOX=false" in message
    assert not (root / "ran.txt").exists()


def test_bwrap_missing_from_path_is_a_clear_error(
    ctx: ToolContext, tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    out = run("shell_exec", command="true")
    assert out.error.code == "sandbox_unavailable"
    assert out.error.message.startswith("shell_exec cannot run: bubblewrap not found ('bwrap')")


HOSTILE = [
    "cat ../sibling/secret.txt",
    "cat {outside}/secret.txt",
    "cd .. && ls -R . && cat sibling/secret.txt",
    "cd / && find / -name secret.txt -o -name session.jsonl 2>/dev/null | xargs -r cat",
    "ln -s {outside}/secret.txt link && cat link",
    "ln -s {outside} dir && cat dir/secret.txt && echo pwned > dir/secret.txt",
    "ln {outside}/secret.txt hard && echo pwned >> hard",
    "cat /proc/1/root{outside}/secret.txt; ls /proc/1/root/proc/1/root{outside}",
    "cat /proc/*/environ | tr '\\0' '\\n' | grep LEAKED",
    "echo pwned >> {log}",
    "echo pwned >> .contextengine/sessions/o/t/w/s/session.jsonl",
    "umount .contextengine; umount .contextengine/sessions; cat {log}",
    "mv .contextengine moved; cat moved/sessions/o/t/w/s/session.jsonl",
    "rm -rf .contextengine; ls -A .contextengine",
    "unshare -Urm sh -c 'umount -l {root}/.contextengine; cat {log}'",
    "mount --bind / /mnt; mount -t tmpfs none {outside}",
    "echo pwned > /tmp/{token}; echo pwned > {tmp}/{token}",
    "(setsid nohup sleep {token} >/dev/null 2>&1 &); disown -a",
    "kill -9 {pid}; echo pwned > {outside}/new.txt",
    "echo '|{root}/x' > /proc/sys/kernel/core_pattern; echo 1 > /proc/sys/vm/drop_caches",
]


@pytest.mark.parametrize("command", HOSTILE)
def test_hostile_commands_do_not_escape(
    root: Path,
    tmp_path: Path,
    outside: Path,
    session_log: Path,
    run,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    token = _token()
    filled = command.format(
        outside=outside, log=session_log, root=root, token=token, tmp=tmp_path, pid=os.getpid()
    )
    log_before = session_log.read_bytes()
    out = run("shell_exec", command=filled, timeout_s=30)
    escapes = [
        "TOPSECRET" in out.text,
        "SESSIONLOG" in out.text,
        "LEAKED" in out.text,
        (outside / "secret.txt").read_text() != "TOPSECRET\n",
        sorted(p.name for p in outside.iterdir()) != ["secret.txt"],
        session_log.read_bytes() != log_before,
        Path("/tmp", token).exists(),
        (tmp_path / token).exists(),
        _running(token),
    ]
    assert not any(escapes), (filled, escapes, out.text)


def test_the_shell_reads_the_sessions_artifacts_at_the_stubs_short_path(tmp_path: Path) -> None:
    agent = Agent(ScriptedProvider([]), tmp_path / "ws", Config())
    saved = agent.externalizer.save("3-Bash", "the whole build log\n")
    shown = agent.externalizer.stub_path(saved)
    assert shown == ".contextengine/artifacts/3-Bash.txt"
    command = f"cat {shown}; echo pwned >> {shown}; ls -A .contextengine; find . -name '*.jsonl'"
    call = ToolCall("c1", "shell_exec", json.dumps({"command": command}))
    out = agent.toolset.execute(call, agent.tool_context)
    assert out.data["stdout"] == "the whole build log\nartifacts\n"
    assert "Read-only file system" in out.data["stderr"]
    assert saved.read_text() == "the whole build log\n"
