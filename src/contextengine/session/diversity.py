"""Controlled diversity of rendered observations (R6.1).

The template of an entry is a pure function of (session id, entry index), chosen when the
entry is appended and frozen in the log with its rendering, so varying the phrasing never
costs a cache hit. With diversity off every entry takes template 0.

A template's words are paid on every later request: a result only takes one that adds at
most ``LABEL_MAX_SHARE`` of its own length (``label_fits``), so a run of tiny results (a
failing command's two lines, a small JSON answer) is not made dearer by its labels.
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


LABEL_MAX_SHARE = 0.02


def label_fits(templates: tuple[str, ...], template: int, tool: str, content_chars: int) -> bool:
    """Whether ``templates[template]`` adds at most ``LABEL_MAX_SHARE`` of a
    ``content_chars`` result over the plain template 0."""
    extra = len(templates[template].format(tool=tool, content="")) - len(
        templates[0].format(tool=tool, content="")
    )
    return extra <= LABEL_MAX_SHARE * content_chars


def template_index(session_id: str, entry_index: int, choices: int, enabled: bool) -> int:
    """Pick a template deterministically from a stable hash of (session id, entry index):
    half the entries take template 0, the plain one, and the rest spread over the others,
    since every word a template adds is paid on every later request."""
    if not enabled or choices <= 1:
        return 0
    digest = hashlib.sha256(f"{session_id}:{entry_index}".encode()).digest()
    pick = int.from_bytes(digest[:8], "big") % (2 * (choices - 1))
    return 0 if pick >= choices - 1 else pick + 1
