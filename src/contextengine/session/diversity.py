"""Controlled diversity of rendered observations (R6.1).

The template of an entry is a pure function of (session id, entry index), chosen when the
entry is appended and frozen in the log with its rendering, so varying the phrasing never
costs a cache hit. With diversity off every entry takes template 0.
"""

from __future__ import annotations

import hashlib

OBSERVATION_TEMPLATES: tuple[str, ...] = (
    "{content}",
    "[{tool}]\n{content}",
    "{tool}:\n{content}",
    "{tool} ->\n{content}",
)

TEXT_OBSERVATION_TEMPLATES: tuple[str, ...] = (
    "Observation: {content}",
    "Observation ({tool}): {content}",
    "Observation from {tool}:\n{content}",
)


def template_index(session_id: str, entry_index: int, choices: int, enabled: bool) -> int:
    """Pick a template deterministically from a stable hash of (session id, entry index):
    half the entries take template 0, the plain one, and the rest spread over the others,
    since every word a template adds is paid on every later request."""
    if not enabled or choices <= 1:
        return 0
    digest = hashlib.sha256(f"{session_id}:{entry_index}".encode()).digest()
    pick = int.from_bytes(digest[:8], "big") % (2 * (choices - 1))
    return 0 if pick >= choices - 1 else pick + 1
