"""A session's metadata, ``session.json``: written once when the session is made.

It names the workspace the session works in and how its provider was chosen (name, model,
base URL), so a resume needs neither repeated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from contextengine.errors import ContextEngineError
from contextengine.untrusted import JSONObject

META_FILE = "session.json"


@dataclass(frozen=True)
class ProviderChoice:
    """How a session's provider was chosen: its name (``make_provider``), model, base URL."""

    name: str | None = None
    model: str = ""
    base_url: str | None = None

    def overridden(
        self, name: str | None, model: str | None, base_url: str | None
    ) -> ProviderChoice:
        """This choice with the given values winning; another provider keeps none of it."""
        if name is not None and name != self.name:
            return ProviderChoice(name, model or "", base_url)
        return ProviderChoice(self.name, model or self.model, base_url or self.base_url)


@dataclass(frozen=True)
class SessionMeta:
    """What ``session.json`` records: the session, its workspace, its provider choice.

    ``parent`` is the id of the session that delegated this one (a sub-agent), else ``None``.
    """

    session_id: str
    workspace: str
    provider: ProviderChoice = ProviderChoice()
    parent: str | None = None

    def to_json(self) -> str:
        """The file's text."""
        return json.dumps(
            {
                "session_id": self.session_id,
                "workspace": self.workspace,
                "model": self.provider.model,
                "provider": self.provider.name,
                "base_url": self.provider.base_url,
                "parent": self.parent,
            },
            indent=1,
        )


def read_meta(directory: Path) -> SessionMeta | None:
    """The session's metadata, or ``None`` when it is missing or unreadable."""
    try:
        return load_meta(directory)
    except ContextEngineError:
        return None


def load_meta(directory: Path) -> SessionMeta:
    """The session's metadata; a missing file or workspace is an error naming the file."""
    path = directory / META_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ContextEngineError(
            f"{directory}: not an agent session ({META_FILE} unreadable: {exc})"
        ) from None
    data: JSONObject = raw if isinstance(raw, dict) else {}
    workspace = data.get("workspace")
    if not isinstance(workspace, str) or not workspace or "\0" in workspace:
        raise ContextEngineError(f"{path}: no valid 'workspace' path recorded")
    return SessionMeta(
        session_id=_text(data.get("session_id")) or directory.name,
        workspace=workspace,
        provider=ProviderChoice(
            _text(data.get("provider")) or None,
            _text(data.get("model")),
            _text(data.get("base_url")) or None,
        ),
        parent=_text(data.get("parent")) or None,
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
