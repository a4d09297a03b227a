"""Finding sessions on disk and reading their logs read-only, for listings and history views.

The log may be appended to by a running turn while it is read, so a line that does not
parse (one being written) ends the reading instead of failing it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pydantic import ValidationError

from contextengine.session.entries import ENTRY_ADAPTER, Entry, UserEntry
from contextengine.session.meta import META_FILE
from contextengine.untrusted import JSONObject

TITLE_CHARS = 80


def session_folders(base: Path, has_session: Callable[[Path], bool]) -> Iterator[Path]:
    """Session folders under ``<root>/<org>/<team>`` (``<workspace>/<session>/``).

    A folder counts once it has its metadata and its store holds its session
    (``has_session``): a creation killed before the log appeared is not a session.
    """
    for meta_path in sorted(base.glob(f"*/*/{META_FILE}")):
        if has_session(meta_path.parent):
            yield meta_path.parent


def read_header(log: Path) -> JSONObject:
    """The log's header line (session id, created, protocol ...), or ``{}`` when unreadable."""
    try:
        with open(log, encoding="utf-8") as fh:
            header = json.loads(fh.readline())
    except (OSError, ValueError):
        return {}
    return header if isinstance(header, dict) else {}


def iter_entries(log: Path) -> Iterator[Entry]:
    """The entries recorded so far, in order."""
    if not log.is_file():
        return
    with open(log, encoding="utf-8") as fh:
        fh.readline()
        for line in fh:
            try:
                yield ENTRY_ADAPTER.validate_python(json.loads(line)["entry"])
            except (ValueError, KeyError, TypeError, ValidationError):
                return


def session_title(entries: Iterable[Entry]) -> str:
    """The first line of the session's first user message, clipped."""
    first = next((e for e in entries if isinstance(e, UserEntry)), None)
    if first is None:
        return ""
    line = first.text.strip().splitlines()[0] if first.text.strip() else ""
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def user_messages(log: Path) -> list[str]:
    """The texts of the session's user messages, in order (one per turn, answers included)."""
    return [e.text for e in iter_entries(log) if isinstance(e, UserEntry)]
