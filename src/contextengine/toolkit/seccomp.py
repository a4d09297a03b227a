"""The seccomp filter sandboxed commands run under: no unix-domain sockets.

A socket file in the workspace (a dev database's, an editor's or git's fsmonitor's) would
otherwise let a command with "no network" talk to a process outside the sandbox, as that
process's user. As Anthropic's sandbox runtime does, the filter makes ``socket(AF_UNIX,
...)`` fail with EPERM; it also refuses io_uring, whose requests can make sockets without a
``socket`` call. libseccomp (through ``pyseccomp``) compiles it for this machine's
architecture; a system call of another architecture kills the process.
"""

from __future__ import annotations

import errno
import functools
import socket
import tempfile

IO_URING_CALLS = ("io_uring_setup", "io_uring_enter", "io_uring_register")
_INT_MASK = 0xFFFF_FFFF  # the kernel reads socket()'s family as an int: compare 32 bits


class FilterUnavailable(Exception):
    """libseccomp or its Python binding cannot be loaded here."""


@functools.cache
def no_unix_sockets() -> bytes:
    """The compiled BPF program, for ``bwrap --seccomp``, that refuses unix sockets."""
    try:
        import pyseccomp  # loads libseccomp.so.2 when imported
    except (ImportError, OSError, RuntimeError) as exc:
        raise FilterUnavailable(f"libseccomp cannot be loaded ({exc})") from None
    refuse = pyseccomp.ERRNO(errno.EPERM)
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    family = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _INT_MASK, socket.AF_UNIX)
    rules.add_rule(refuse, "socket", family)
    for name in IO_URING_CALLS:
        rules.add_rule(refuse, name)
    with tempfile.TemporaryFile() as program:
        rules.export_bpf(program)
        program.seek(0)
        return program.read()
