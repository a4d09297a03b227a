"""The socket files a sandbox masks when the user names the unix sockets it may reach.

seccomp sees ``socket(AF_UNIX)``, not the path a ``connect`` names, so a named socket means
the filter is off; every other socket file under the workspace is then covered, when the
command starts, by a read-only bind of ``/dev/null`` (``connect`` to it fails: "Connection
refused"). A socket made after the command started is not covered.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

MAX_SCAN_ENTRIES = 200_000  # a workspace bigger than this is not walked on every command


def other_sockets(
    workspace: str, named: Iterable[str], skipped: Iterable[str] = ()
) -> list[str] | None:
    """The socket files under ``workspace`` (symlinks not followed, ``skipped`` folders not
    entered) other than ``named``, by real path; ``None`` past ``MAX_SCAN_ENTRIES`` entries."""
    allowed = {os.path.realpath(path) for path in named}
    skip = {os.path.realpath(path) for path in skipped}
    found: list[str] = []
    seen = 0
    folders = [os.path.realpath(workspace)]
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            continue  # unreadable here: unreadable in the sandbox too
        with entries:
            for entry in entries:
                seen += 1
                if seen > MAX_SCAN_ENTRIES:
                    return None
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.path not in skip:
                            folders.append(entry.path)
                    elif (
                        stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
                        and entry.path not in allowed
                    ):
                        found.append(entry.path)
                except OSError:
                    continue  # gone meanwhile
    return sorted(found)
