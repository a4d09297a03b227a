"""BPE token counts: real counts, cached per text, with a bounded cache."""

from __future__ import annotations

import contextengine.context.tokens as tokens
from contextengine.context.tokens import TokenCounter, count_tokens


def test_counts_are_real_bpe_not_a_length_estimate() -> None:
    assert count_tokens("hello world") == 2
    assert count_tokens("") == 0
    assert count_tokens("a" * 300) < 300 // 3


def test_the_cache_stays_bounded_and_counts_stay_right(monkeypatch) -> None:
    monkeypatch.setattr(tokens, "MAX_CACHED_TEXTS", 10)
    counter = TokenCounter()
    for k in range(100):
        assert counter.count(f"text number {k}") == counter.count_uncached(f"text number {k}")
    assert len(counter._cache) <= 10


def test_a_text_over_the_encoders_limit_is_counted_in_pieces() -> None:
    huge = "[" * 300_000 + "é" * 100_000
    assert TokenCounter().count(huge) > 0
