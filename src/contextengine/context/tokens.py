"""Token counts: ``o200k_base`` BPE, counted once per distinct text.

Provider usage is the truth; where a decision needs a count before the provider gives one
(the compaction trigger, pruning), this real BPE count stands in, never ``len(text) // 3``.
Requests repeat the same chunks (the system prompt, every history message) step after
step, so counts are cached per string and a long session tokenizes each text once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from contextengine.errors import ContextEngineError

ENCODING = "o200k_base"
CHARS_PER_TOKEN = 3
# Texts whose counts a counter keeps; past it the oldest half is forgotten, so a server
# that runs for weeks keeps a bounded cache while a session's repeated chunks stay counted.
MAX_CACHED_TEXTS = 50_000
# The encoder refuses inputs over 200,000 tokens; a character is at most 4 tokens, so
# longer texts are counted in pieces of this many characters (a few tokens may differ at
# the seams, which no decision here can notice).
PIECE_CHARS = 50_000


class TokenCounter:
    """Counts BPE tokens of texts, caching the count of every text it has seen."""

    def __init__(self, encoding: str = ENCODING) -> None:
        self.encoding = encoding
        self._encoder = _load(encoding)
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens of ``text`` (special-token strings count as plain text)."""
        found = self._cache.get(text)
        if found is None:
            if len(self._cache) >= MAX_CACHED_TEXTS:
                for old in list(self._cache)[: MAX_CACHED_TEXTS // 2]:
                    del self._cache[old]
            found = self._cache[text] = self.count_uncached(text)
        return found

    def count_uncached(self, text: str) -> int:
        """Tokens of a text unlikely to repeat (a prefix cut mid-chunk); not cached."""
        encode = self._encoder.encode_ordinary
        return sum(len(encode(text[k : k + PIECE_CHARS])) for k in range(0, len(text), PIECE_CHARS))


@cache
def shared_counter() -> TokenCounter:
    """The process-wide counter the engine's own decisions use."""
    return TokenCounter()


def count_tokens(text: str) -> int:
    """BPE tokens of ``text`` with the shared counter."""
    return shared_counter().count(text)


def cut_at_line(text: str, limit: int, note: str, size: Callable[[str], int] = count_tokens) -> str:
    """The first whole lines of ``text`` that fit in ``limit`` (as ``size`` counts) beside
    ``note``, which says what was cut and comes last: the same text always cuts the same
    way, so a cut text in a cached prefix stays cached."""
    room = limit - size(note)
    kept: list[str] = []
    for line in text.splitlines():
        room -= size(line) + 1
        if room < 0:
            break
        kept.append(line)
    return "\n".join([*kept, note])


def estimate_tokens(text_or_chars: str | int) -> int:
    """The seed's quick estimate, ``len(text) // 3``: for fakes and for texts known only by
    their length; decisions use ``count_tokens``."""
    chars = text_or_chars if isinstance(text_or_chars, int) else len(text_or_chars)
    return chars // CHARS_PER_TOKEN


def _load(encoding: str) -> Any:
    try:
        import bpe_openai
    except ImportError:
        raise ContextEngineError(
            "token counting needs the 'bpe-openai' package (a dependency of contextengine): "
            "pip install bpe-openai"
        ) from None
    return bpe_openai.get_encoding(encoding)
