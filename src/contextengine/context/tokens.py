"""The pre-call token estimate (seed 003): ``len(text) // 3``. Provider usage is the truth."""

from __future__ import annotations


def estimate_tokens(text_or_chars: str | int) -> int:
    """Estimate tokens of a text, or of a character count."""
    chars = text_or_chars if isinstance(text_or_chars, int) else len(text_or_chars)
    return chars // 3
