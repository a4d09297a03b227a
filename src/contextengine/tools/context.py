"""Per-session tool state: the workspace, what was read when, output caps, web settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from contextengine.toolkit.sandbox import SandboxPolicy
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.web_http import RobotsCache, WebPolicy

if TYPE_CHECKING:
    from contextengine.codemap import CodeMap
    from contextengine.memory.working_memory import WorkingMemory
    from contextengine.tools.delegation import Delegator
    from contextengine.tools.search_backend import SearchBackend


@dataclass(frozen=True)
class ToolContext:
    """What tools of one session share, complete when made (``dataclasses.replace`` makes
    one that differs; the mutable state in it, ``read_mtimes`` and ``robots``, is shared).

    ``read_mtimes`` maps a file's real path to its mtime (ns) when this session last read
    or wrote it; it lives in memory only (R7.6). ``max_output_bytes`` caps each shell
    stream and the text one ``file_read`` returns. ``env`` is the shell's environment
    (``None``: inherit this process's; in the sandbox, added to a minimal one). ``sandbox``
    confines ``shell_exec`` (``None``: commands run unconfined). ``memory`` is the session's
    working memory, which the ``memory_*`` tools write (``None``: working memory is off).
    ``web`` is how the web tools treat sites, ``robots`` the robots.txt rules fetched so
    far, and ``search`` the backend ``web_search`` asks (``None``: not configured).
    ``code_map`` is the workspace's code map that ``code_map`` renders (``None``: off).
    ``delegate`` runs the sub-agents ``agent_delegate`` asks for (``None``: none may run).
    """

    workspace: Workspace
    read_mtimes: dict[str, int] = field(default_factory=dict)
    shell_timeout_s: float = 120.0
    max_output_bytes: int = 1_000_000
    env: Mapping[str, str] | None = None
    sandbox: SandboxPolicy | None = field(default_factory=SandboxPolicy)
    memory: WorkingMemory | None = None
    web: WebPolicy = field(default_factory=WebPolicy)
    robots: RobotsCache = field(default_factory=RobotsCache)
    search: SearchBackend | None = None
    code_map: CodeMap | None = None
    delegate: Delegator | None = None
