"""Confining one command with bubblewrap (``bwrap``): what it may see, use and keep running.

The command sees the workspace read-write at its real path, the system directories programs
need read-only, a fresh read-only ``/proc`` and fresh ``/dev`` and ``/tmp``; every other host
path is absent, and the session folders inside the workspace (the session tree's root, and
its memory database) are covered by empty read-only mounts. It gets no network (unless
allowed), no unix-domain sockets (a seccomp filter, unless all are allowed; with named ones,
the others in the workspace masked: see ``unix_sockets``), a minimal environment, no capabilities, and rlimits on CPU time,
memory and file size. It runs in its own pid namespace, and
``ConfinedProcess.end`` waits until the namespace's pid 1 has taken every process the
command started down with it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import select
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextengine.toolkit.seccomp import FilterUnavailable, no_unix_sockets
from contextengine.toolkit.unix_sockets import MAX_SCAN_ENTRIES, other_sockets

SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SANDBOX_HOME = "/tmp"
OPT_OUT = "set sandbox = false (or CONTEXTENGINE_SANDBOX=false) to run commands unconfined"
SELF_CHECK_TIMEOUT_S = 10.0
END_TIMEOUT_S = 5.0
MIB = 1024 * 1024


class SandboxSettings(Protocol):
    """The settings a policy is read from (``Config`` has them; the sandbox never imports it)."""

    @property
    def sandbox(self) -> bool: ...
    @property
    def sandbox_network(self) -> bool: ...
    @property
    def sandbox_read_only_paths(self) -> Sequence[str]: ...
    @property
    def sandbox_memory_mb(self) -> int: ...
    @property
    def sandbox_cpu_s(self) -> int: ...
    @property
    def sandbox_file_size_mb(self) -> int: ...
    @property
    def sandbox_unix_sockets(self) -> bool | Sequence[str]: ...
    @property
    def sandbox_bwrap(self) -> str: ...


class SandboxUnavailable(Exception):
    """``bwrap`` is missing or cannot create a sandbox here, or a setting names a missing path."""


@dataclass(frozen=True)
class SandboxPolicy:
    """What a sandboxed command may see and use (limits are per process)."""

    network: bool = False
    read_only_paths: tuple[str, ...] = ()
    hidden_paths: tuple[str, ...] = ()
    memory_mb: int = 4096
    cpu_s: int = 600
    file_size_mb: int = 1024
    bwrap: str = "bwrap"
    unix_sockets: bool = False  # every one (no filter, nothing masked)
    unix_socket_paths: tuple[str, ...] = ()  # only these (workspace-relative or absolute)
    shown_paths: tuple[tuple[str, str], ...] = ()  # (source, target) read only, in a hidden folder

    @classmethod
    def from_config(
        cls,
        config: SandboxSettings,
        hidden_paths: Iterable[Path] = (),
        shown_paths: Iterable[tuple[Path, Path]] = (),
    ) -> SandboxPolicy | None:
        """The policy ``config`` asks for; ``None`` when the sandbox is switched off.
        ``shown_paths`` (source, target): folders shown read only at a path inside a hidden
        folder (a target outside every hidden folder is not shown: it would be made on the
        host)."""
        if not config.sandbox:
            return None
        return cls(
            network=config.sandbox_network,
            read_only_paths=tuple(config.sandbox_read_only_paths),
            hidden_paths=tuple(str(p) for p in hidden_paths),
            shown_paths=tuple((str(source), str(target)) for source, target in shown_paths),
            memory_mb=config.sandbox_memory_mb,
            cpu_s=config.sandbox_cpu_s,
            file_size_mb=config.sandbox_file_size_mb,
            bwrap=config.sandbox_bwrap,
            unix_sockets=config.sandbox_unix_sockets is True,
            unix_socket_paths=_named(config.sandbox_unix_sockets),
        )


@dataclass(frozen=True)
class ConfinedCommand:
    """An argv ready for ``subprocess.Popen``: its environment, the child's rlimits and the
    seccomp program ``bwrap`` installs (``None``: none)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    limits: tuple[tuple[int, int], ...]
    seccomp: bytes | None = None

    def preexec(self) -> None:
        """Runs in the forked child before ``bwrap`` starts: set the limits."""
        for which, value in self.limits:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))


def confine(
    policy: SandboxPolicy,
    argv: Sequence[str],
    workspace: Path,
    extra_env: Mapping[str, str] | None = None,
) -> ConfinedCommand:
    """``argv`` wrapped in ``bwrap`` under ``policy``; raises ``SandboxUnavailable``."""
    bwrap = checked_bwrap(policy.bwrap)
    for path in policy.read_only_paths:
        if not os.path.exists(path):
            raise SandboxUnavailable(f"sandbox_read_only_paths entry {path!r} does not exist")
    env = {"PATH": SANDBOX_PATH, "HOME": SANDBOX_HOME, "LANG": "C.UTF-8", "TERM": "dumb"}
    env.update(extra_env or {})
    limits = (
        (resource.RLIMIT_CPU, policy.cpu_s),
        (resource.RLIMIT_DATA, policy.memory_mb * MIB),
        (resource.RLIMIT_FSIZE, policy.file_size_mb * MIB),
    )
    args = [bwrap, *_isolation(policy.network), *_mounts(policy, workspace)]
    args += ["--chdir", str(workspace), "--", *argv]
    return ConfinedCommand(tuple(args), env, limits, _seccomp(policy))


def _named(setting: bool | Sequence[str]) -> tuple[str, ...]:
    """The sockets ``sandbox_unix_sockets`` names (none for its true/false forms)."""
    return () if isinstance(setting, bool) else tuple(setting)


def _seccomp(policy: SandboxPolicy) -> bytes | None:
    """The filter program refusing unix sockets, unless the policy allows all or names some."""
    if policy.unix_sockets or policy.unix_socket_paths:
        return None
    try:
        return no_unix_sockets()
    except FilterUnavailable as exc:
        raise SandboxUnavailable(
            f"{exc}; install libseccomp2, set sandbox_unix_sockets = true, or {OPT_OUT}"
        ) from None


class ConfinedProcess:
    """A confined command started: ``process`` is its ``bwrap``, ``end`` empties the sandbox."""

    def __init__(self, command: ConfinedCommand, cwd: Path) -> None:
        filter_fd = _program_fd(command.seccomp) if command.seccomp is not None else None
        seccomp = [] if filter_fd is None else ["--seccomp", str(filter_fd)]
        info_read, info_write = os.pipe()
        bwrap, *rest = command.argv
        try:
            self.process = subprocess.Popen(
                [bwrap, "--info-fd", str(info_write), *seccomp, *rest],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=dict(command.env),
                pass_fds=(info_write,) if filter_fd is None else (info_write, filter_fd),
                # Safe despite threads: the hook makes only getrlimit and setrlimit calls.
                preexec_fn=command.preexec,
            )
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
            if filter_fd is not None:
                os.close(filter_fd)
        self._init = _sandbox_init(info_read)

    def end(self) -> None:
        """Kill whatever still runs in the sandbox and wait (bounded) until all of it is gone."""
        if self._init is None:
            return
        # bwrap reports the command's exit as soon as it happens; its pid 1 takes every other
        # process of the sandbox down with it only while exiting, so wait for that.
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._init, signal.SIGKILL)
        select.select([self._init], [], [], END_TIMEOUT_S)
        os.close(self._init)
        self._init = None


def _program_fd(program: bytes) -> int:
    """A descriptor reading ``program`` from its start (bwrap reads it to the end)."""
    fd = os.memfd_create("contextengine-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def _sandbox_init(info_fd: int) -> int | None:
    """A pidfd for the sandbox's pid 1, named on bwrap's info fd (``None`` if bwrap failed)."""
    with os.fdopen(info_fd, "rb") as stream:
        text = stream.read()
    try:
        info = json.loads(text)
        pid, namespace = int(info["child-pid"]), f"pid:[{info['pid-namespace']}]"
        pidfd = os.pidfd_open(pid)
    except (ValueError, KeyError, TypeError, OSError):
        return None
    try:
        # Its pid may be reused once pid 1 is gone: only a process in the sandbox is ours.
        if os.readlink(f"/proc/{pid}/ns/pid") == namespace:
            return pidfd
    except OSError:
        pass
    os.close(pidfd)
    return None


def checked_bwrap(name: str) -> str:
    """The path ``name`` finds on PATH, once that ``bwrap`` passed its self-check."""
    path = shutil.which(name)
    if path is None:
        raise SandboxUnavailable(f"bubblewrap not found ({name!r}); install it or {OPT_OUT}")
    return _self_checked(path)


@functools.cache
def _self_checked(path: str) -> str:
    """``path`` if that ``bwrap`` can create a sandbox here (failures are not cached)."""
    probe = [path, *_isolation(network=False), "--ro-bind", "/", "/", "true"]
    try:
        done = subprocess.run(
            probe,
            env={"PATH": SANDBOX_PATH},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=SELF_CHECK_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap {path} cannot run ({exc}); {OPT_OUT}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = said[-1] if said else f"exit code {done.returncode}"
        raise SandboxUnavailable(f"bubblewrap {path} fails its self-check ({reason}); {OPT_OUT}")
    return path


def _isolation(network: bool) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    if network:
        args.append("--share-net")
    if os.geteuid() == 0:
        # Run as root, bwrap keeps every capability unless told otherwise, and with
        # CAP_SYS_ADMIN the command could unmount what hides the session folders.
        args += ["--cap-drop", "ALL"]
    return args


def _mounts(policy: SandboxPolicy, workspace: Path) -> list[str]:
    """Mount arguments, parents before children so a deeper mount is never covered."""
    mounts: list[tuple[str, list[str]]] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            mounts.append((path, ["--symlink", os.readlink(path), path]))
        elif os.path.isdir(path):
            mounts.append((path, ["--ro-bind", path, path]))
    # Read-only: a command running as root could otherwise write /proc/sys (core_pattern).
    mounts.append(("/proc", ["--proc", "/proc", "--remount-ro", "/proc"]))
    mounts.append(("/dev", ["--dev", "/dev"]))
    mounts.append(("/tmp", ["--size", str(policy.memory_mb * MIB), "--tmpfs", "/tmp"]))
    if policy.network and os.path.islink("/etc/resolv.conf"):
        resolver = os.path.realpath("/etc/resolv.conf")
        mounts.append((resolver, ["--ro-bind-try", resolver, resolver]))
    for path in map(os.path.abspath, policy.read_only_paths):
        mounts.append((path, ["--ro-bind", path, path]))
    named = [os.path.join(workspace, path) for path in policy.unix_socket_paths]
    for path in named:
        if not Path(path).is_relative_to(workspace):
            mounts.append((path, ["--bind-try", path, path]))  # not there yet: not reachable
    mounts.append((str(workspace), ["--bind", str(workspace), str(workspace)]))
    mounts.sort(key=lambda mount: len(Path(mount[0]).parts))
    args = [arg for _, mount in mounts for arg in mount]
    covered: list[Path] = []
    shown_at = [(source, _real(target)) for source, target in policy.shown_paths]
    for hidden in sorted(map(_real, policy.hidden_paths)):
        if any(hidden.is_relative_to(c) for c in covered):
            continue
        if hidden.is_dir():
            covered.append(hidden)
            shown = [
                arg
                for source, target in shown_at
                if target.is_relative_to(hidden)
                for arg in ("--ro-bind-try", source, str(target))
            ]
            # The mount points are made in the empty tmpfs before it becomes read-only.
            args += ["--tmpfs", str(hidden), *shown, "--remount-ro", str(hidden)]
        elif hidden.is_file():
            covered.append(hidden)
            args += ["--ro-bind", os.devnull, str(hidden)]
    if named and not policy.unix_sockets:
        args += _masked_sockets(workspace, named, covered)
    # The sandbox's own root (where bwrap made the mount points) becomes read-only last.
    return [*args, "--remount-ro", "/"]


def _real(path: str) -> Path:
    """``path`` with its existing part's symlinks resolved (the rest need not exist)."""
    return Path(os.path.realpath(path))


def _masked_sockets(workspace: Path, named: Sequence[str], covered: Sequence[Path]) -> list[str]:
    """``/dev/null`` over every socket file in the workspace but the ``named`` ones."""
    others = other_sockets(str(workspace), named, map(str, covered))
    if others is None:
        raise SandboxUnavailable(
            f"the workspace has over {MAX_SCAN_ENTRIES} entries, too many to find the unix "
            "sockets sandbox_unix_sockets does not name: set it to true (all) or false (none)"
        )
    return [arg for path in others for arg in ("--ro-bind", os.devnull, path)]
