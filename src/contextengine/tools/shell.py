"""``shell_exec``: one bash command in the workspace, with a timeout that kills its group.

The command runs in the session's bubblewrap sandbox (``tools/sandbox.py``) unless the
session switched it off; where the sandbox cannot run, the call fails and says so.

stdout and stderr are read by two threads into separate buffers, each capped at
``ToolContext.max_output_bytes`` (head and tail kept, the middle replaced by a marker).

A non-zero exit is an error, except a search or comparison (``grep``, ``test``, ``diff``)
that exits 1 and prints nothing: that is its answer "no", a success.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import stderr_tail
from contextengine.toolkit.command_line import answered_no
from contextengine.toolkit.sandbox import ConfinedProcess, SandboxUnavailable, confine
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext

MAX_TIMEOUT_S = 600.0
# After the shell exits, a background child may keep the pipes open; wait this long for EOF.
PIPE_GRACE_S = 1.0


class _Capture(threading.Thread):
    """Drains one pipe, keeping its first and last ``cap // 2`` bytes."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def run(self) -> None:
        fd = self._stream.fileno()
        while chunk := os.read(fd, 65536):
            self.total += len(chunk)
            room = self._head_cap - len(self._head)
            if room > 0:
                self._head += chunk[:room]
                chunk = chunk[room:]
            self._tail += chunk
            if len(self._tail) > 2 * self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]
        self._stream.close()

    def text(self, name: str) -> str:
        """What was captured, decoded; a marker says how many bytes were dropped."""
        tail = bytes(self._tail[-self._tail_cap :]) if self._tail_cap else b""
        omitted = self.total - len(self._head) - len(tail)
        if omitted <= 0:
            return (bytes(self._head) + bytes(self._tail)).decode("utf-8", errors="replace")
        marker = (
            f"\n[... {omitted} bytes of {name} omitted: output cap is "
            f"{self._head_cap + self._tail_cap} bytes ...]\n"
        )
        head = bytes(self._head).decode("utf-8", errors="replace")
        return head + marker + tail.decode("utf-8", errors="replace")


class ShellExec:
    """``shell_exec``: run ``bash -c COMMAND`` in the workspace."""

    name: ClassVar[str] = "shell_exec"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(
        category="exec", risk="high", compressor="shell", action_key="command"
    )
    description: ClassVar[str] = "Run a bash command in the workspace (fresh shell, no stdin)."

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        command: str = Field(min_length=1)
        timeout_s: float | None = None

        # Checked here, not as schema bounds: the schema is paid on every request.
        @field_validator("timeout_s")
        @classmethod
        def _timeout_in_range(cls, value: float | None) -> float | None:
            if value is not None and not 0 < value <= MAX_TIMEOUT_S:
                raise ValueError(f"timeout_s must be in (0, {MAX_TIMEOUT_S:g}]")
            return value

    def run(self, args: ShellExec.Args, ctx: ToolContext) -> ToolOutcome:
        """Execute the command and report its output and exit code."""
        timeout = min(args.timeout_s or ctx.shell_timeout_s, MAX_TIMEOUT_S)
        cap = ctx.max_output_bytes
        try:
            proc, end = _start(["bash", "-c", args.command], ctx)
        except SandboxUnavailable as exc:
            return ToolOutcome.fail("sandbox_unavailable", f"shell_exec cannot run: {exc}")
        except OSError as exc:
            return ToolOutcome.fail("io_error", f"cannot start bash: {exc.strerror or exc}")
        assert proc.stdout is not None and proc.stderr is not None
        readers = (_Capture(proc.stdout, cap), _Capture(proc.stderr, cap))
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            proc.wait()
        except BaseException:
            _kill_group(proc.pid)
            raise
        finally:
            end()
        grace_ends = time.monotonic() + PIPE_GRACE_S
        for reader in readers:
            reader.join(max(0.0, grace_ends - time.monotonic()))
        pipes_held = any(r.is_alive() for r in readers)
        stdout, stderr = readers[0].text("stdout"), readers[1].text("stderr")
        code = proc.returncode
        text = _layout(stdout, stderr, code, timeout if timed_out else None, pipes_held)
        data = {
            "command": args.command,
            "exit_code": code,
            "stdout_lines": _count_lines(stdout),
            "stderr_lines": _count_lines(stderr),
            "stdout": stdout,
            "stderr": stderr,
            "timed_out": timed_out,
        }
        if timed_out:
            message = f"command timed out after {timeout:g} s; its process group was killed"
            return ToolOutcome.fail("timeout", message + _stderr_clause(stderr), text, data)
        if code != 0 and not answered_no(args.command, code, stdout + stderr):
            message = f"command exited with code {code}"
            return ToolOutcome.fail("nonzero_exit", message + _stderr_clause(stderr), text, data)
        return ToolOutcome.ok(text, data)


def _start(argv: list[str], ctx: ToolContext) -> tuple[subprocess.Popen[bytes], Callable[[], None]]:
    """``argv`` running in the session's sandbox (or unconfined), and how to end what is left."""
    if ctx.sandbox is not None:
        confined = ConfinedProcess(
            confine(ctx.sandbox, argv, ctx.workspace.root, ctx.env), ctx.workspace.root
        )
        return confined.process, confined.end
    process = subprocess.Popen(
        argv,
        cwd=ctx.workspace.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(ctx.env) if ctx.env is not None else None,
    )
    return process, lambda: None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _count_lines(text: str) -> int:
    return len(text.splitlines())


def _stderr_clause(stderr: str) -> str:
    if not stderr.strip():
        return "; stderr is empty"
    return f"; stderr (tail):\n{stderr_tail(stderr)}"


def _block(tag: str, body: str) -> str:
    newline = "" if not body or body.endswith("\n") else "\n"
    return f"<{tag}>\n{body}{newline}</{tag}>"


def _layout(
    stdout: str, stderr: str, code: int, timed_out_after: float | None, pipes_held: bool
) -> str:
    """The fixed text layout of a shell observation: stdout as it is, stderr in a block,
    then the exit code; an empty stream is left out. No wrapper around stdout, the common
    case: every character of it is paid again on each later request."""
    parts = [stdout.removesuffix("\n")] if stdout else []
    if stderr:
        parts.append(_block("stderr", stderr))
    parts.append(f"[exit code {code}]")
    if timed_out_after is not None:
        parts.append(
            f"<timeout>killed after {timed_out_after:g} s with its whole process group</timeout>"
        )
    if pipes_held:
        parts.append(
            "<note>a background process still holds the output pipes; "
            "output written after the command exited is not shown</note>"
        )
    return "\n".join(parts)
