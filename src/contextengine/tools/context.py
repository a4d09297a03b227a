"""Per-session tool state: the workspace, what was read when, and output caps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextengine.tools.sandbox import SandboxPolicy
from contextengine.tools.workspace import Workspace

if TYPE_CHECKING:
    from contextengine.memory.working_memory import WorkingMemory


@dataclass
class ToolContext:
    """What tools of one session share.

    ``read_mtimes`` maps a file's real path to its mtime (ns) when this session last read
    or wrote it; it lives in memory only (R7.6). ``max_output_bytes`` caps each shell
    stream and the text one ``file_read`` returns. ``env`` is the shell's environment
    (``None``: inherit this process's; in the sandbox, added to a minimal one). ``sandbox``
    confines ``shell_exec`` (``None``: commands run unconfined). ``memory`` is the session's
    working memory, which the ``memory_*`` tools write (``None``: working memory is off).
    """

    workspace: Workspace
    read_mtimes: dict[str, int] = field(default_factory=dict)
    shell_timeout_s: float = 120.0
    max_output_bytes: int = 1_000_000
    env: Mapping[str, str] | None = None
    sandbox: SandboxPolicy | None = field(default_factory=SandboxPolicy)
    memory: WorkingMemory | None = None
