"""Paths on the conversation's topic first in a ref's name index (#38).

A listing too big for its index (``ls -R`` of a repository) keeps the names that come
first; the folder the task is about (``astropy/timeseries`` for a ``TimeSeries`` bug) may
come after the room runs out, and the agent's next call goes there. So a few paths that
share a rare word with what the user said are listed first. Few, because a task's words
match many names (every file of ``io/ascii`` for an ``ascii`` bug), which would push out
the names the agent goes on to use; and not a word that a quarter of the paths have (the
repository's own name), which says nothing about where to look.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from contextengine.session.entries import UserEntry
from contextengine.session.session import Session

# Zipf 4.5 is about 30 uses a million words: the 3,000 or so most frequent English words,
# which say least about what a text holds, are at or above it.
COMMON_WORD_ZIPF = 4.5
TOPIC_PATHS = 8  # at most this many paths are moved to the front
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")
# the parts of a CamelCase name (``SlicedLowLevelWCS``: Sliced, Low, Level, WCS), which
# name the package it lives in as often as the whole does (``astropy/wcs``)
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")
_PARTS = re.compile(r"[/._-]+")  # a path's folders and the words of their names
_COMMON_SHARE = 0.25  # a word this share of the paths have is not a topic


def user_text(session: Session) -> str:
    """Everything the user said in ``session`` (the task and later messages)."""
    return "\n".join(r.entry.text for r in session.records if isinstance(r.entry, UserEntry))


def on_topic(names: Sequence[str], topic: str, most: int = TOPIC_PATHS) -> list[str]:
    """The first ``most`` of ``names`` that are paths with a rare word of ``topic`` as one
    of their parts (a folder, a word of a name, in any letter case) that fewer than a
    quarter of the paths have, in their order."""
    paths = [(name, set(_PARTS.split(name.lower()))) for name in names if "/" in name]
    whole = _WORD.findall(topic)
    camel = (part for w in whole for part in _CAMEL_PART.findall(w) if len(part) >= 3)
    words = {w.lower() for w in (*whole, *camel) if not common_word(w)}
    limit = _COMMON_SHARE * len(paths)
    words = {w for w in words if sum(w in parts for _, parts in paths) < limit}
    found: list[str] = []
    for name, parts in paths:
        if len(found) == most or not words:
            break
        if not words.isdisjoint(parts):
            found.append(name)
    return found


def load_word_frequencies() -> None:
    """Load wordfreq's English table now rather than in the middle of a first tool result."""
    from wordfreq import zipf_frequency

    zipf_frequency("the", "en")


@lru_cache(maxsize=65_536)
def common_word(word: str) -> bool:
    """Whether ``word`` is among the most frequent English words (wordfreq's Zipf scale)."""
    from wordfreq import zipf_frequency  # imported on first use: it adds 0.2 s to every start

    return zipf_frequency(word.lower(), "en") >= COMMON_WORD_ZIPF
