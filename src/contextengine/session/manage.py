"""What a person does to whole sessions: give one a title, or move it to the trash.

Neither touches the append-only log. A title is a one-line ``title.txt`` next to
``session.json``; a deleted session's folder moves, unchanged, to ``<root>/.trash/`` (same
``<org>/<team>/<workspace>/<session>`` path below it), out of every listing and restorable
by moving it back.
"""

from __future__ import annotations

from pathlib import Path

from contextengine.errors import ConfigError, ContextEngineError

TITLE_FILE = "title.txt"
TITLE_MAX_CHARS = 200
TRASH_DIR = ".trash"


def custom_title(directory: Path) -> str | None:
    """The title a person gave the session, or ``None``."""
    try:
        text = (directory / TITLE_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def set_title(directory: Path, title: str) -> str | None:
    """Store ``title`` (an empty one removes it); the title now in force, or ``None``.

    A title of more than one line or over ``TITLE_MAX_CHARS`` is a ``ConfigError``."""
    text = title.strip()
    if "\n" in text or "\r" in text:
        raise ConfigError("a session title must be one line")
    if len(text) > TITLE_MAX_CHARS:
        raise ConfigError(f"a session title must be at most {TITLE_MAX_CHARS} characters")
    path = directory / TITLE_FILE
    if not text:
        path.unlink(missing_ok=True)
        return None
    staged = path.with_suffix(".tmp")
    staged.write_text(text + "\n", encoding="utf-8")
    staged.replace(path)  # a reader sees the old title or the new one, never half
    return text


def trash_session(directory: Path, root: Path) -> Path:
    """Move the session folder under ``root`` to ``root/.trash/``; its new place."""
    target = root / TRASH_DIR / directory.relative_to(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise ContextEngineError(f"{target} already exists; move it away before deleting again")
    return directory.rename(target)
