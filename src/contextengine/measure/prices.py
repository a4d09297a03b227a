"""Prices per model family (USD per million tokens) and the cost of one call."""

from __future__ import annotations

from dataclasses import dataclass

from contextengine.errors import ContextEngineError


@dataclass(frozen=True)
class Prices:
    """USD per million tokens: uncached input, cache read, cache write, output."""

    input: float
    cached: float
    cache_write: float
    output: float

    def cost(self, uncached: int, cached: int, cache_write: int, output: int) -> float:
        """USD for one call's token counts."""
        return (
            uncached * self.input
            + cached * self.cached
            + cache_write * self.cache_write
            + output * self.output
        ) / 1_000_000


DEFAULT_FAMILY = "claude-sonnet"
# Checked against the vendors' price pages; a family without a cache-write premium
# (OpenAI caches automatically) charges writes at the input price.
PRICE_TABLE: dict[str, Prices] = {
    "claude-sonnet": Prices(3.0, 0.30, 3.75, 15.0),
    "claude-opus": Prices(5.0, 0.50, 6.25, 25.0),
    "claude-haiku": Prices(1.0, 0.10, 1.25, 5.0),
    "gpt-4o": Prices(2.5, 1.25, 2.5, 10.0),
    "gpt-4.1": Prices(2.0, 0.50, 2.0, 8.0),
}


def prices_for(family: str) -> Prices:
    """The prices of a family named exactly (``--prices`` option); one-line error otherwise."""
    try:
        return PRICE_TABLE[family]
    except KeyError:
        known = ", ".join(PRICE_TABLE)
        raise ContextEngineError(f"unknown price family {family!r} (known: {known})") from None


def family_of(model: str) -> str:
    """The price family of a model name (``claude-opus-4-6`` -> ``claude-opus``), else the
    default family."""
    name = model.lower()
    for family in sorted(PRICE_TABLE, key=len, reverse=True):
        vendor, _, kind = family.partition("-")
        if family in name or (vendor in name and kind in name):
            return family
    return DEFAULT_FAMILY
