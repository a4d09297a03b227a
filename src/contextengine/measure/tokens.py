"""Real token counts for measurement: ``o200k_base`` BPE, counted once per distinct text.

Requests repeat the same chunks (the system prompt, every history message) step after
step, so counts are cached per chunk string and a long replay tokenizes each text once.
"""

from __future__ import annotations

from typing import Any

from contextengine.errors import ContextEngineError

ENCODING = "o200k_base"


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
            found = self._cache[text] = len(self._encoder.encode_ordinary(text)) if text else 0
        return found

    def count_uncached(self, text: str) -> int:
        """Tokens of a text unlikely to repeat (a prefix cut mid-chunk); not cached."""
        return len(self._encoder.encode_ordinary(text)) if text else 0


def _load(encoding: str) -> Any:
    try:
        import bpe_openai
    except ImportError:
        raise ContextEngineError(
            "token counting needs the 'bpe-openai' package (a dependency of contextengine): pip install bpe-openai"
        ) from None
    return bpe_openai.get_encoding(encoding)
