"""Prices (USD per million tokens) from genai-prices' bundled data, and the cost of one call.

A model genai-prices does not know (a self-hosted name, a new model) has no price: callers
report it as "price unknown" rather than guessing. Only the data shipped inside the installed
package is read, never fetched, and a time-of-day tier (DeepSeek's off-peak half price) is
read at ``PRICE_HOUR`` UTC, so a replay prices the same on every machine at any hour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time
from decimal import Decimal
from functools import cache
from typing import Any

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

    def cache_shares(self) -> tuple[float, float] | None:
        """A cache read's and a cache write's price as shares of an uncached input token
        (None for a model whose input is free)."""
        if self.input <= 0:
            return None
        return self.cached / self.input, self.cache_write / self.input


UNKNOWN_PRICE = "price unknown"
"""How a model without a known price is reported."""

DEFAULT_FAMILY = "claude-sonnet"
FAMILY_MODELS: dict[str, str] = {
    "claude-sonnet": "claude-sonnet-4-6",
    "claude-opus": "claude-opus-4-6",
    "claude-haiku": "claude-haiku-4-5",
    "gpt-4o": "gpt-4o",
    "gpt-4.1": "gpt-4.1",
}
"""Short names ``--prices`` accepts, each priced as the genai-prices model it names."""
RECORDED = "recorded"
"""``--prices recorded``: a replayed run at its own recorded model's prices."""

PRICE_HOUR = 12
"""The UTC hour prices are read at: the standard tier of time-of-day prices."""


def load_price_table() -> None:
    """Load genai-prices' bundled table now rather than when the first turn is priced."""
    from genai_prices.data_snapshot import get_snapshot

    get_snapshot()


@cache
def model_prices(model: str) -> Prices | None:
    """The prices of ``model`` (a model name as a provider or a router reports it), or None
    when genai-prices does not know it. Tiered prices are their base tier (below 200k tokens);
    a time-of-day price its standard tier, whatever the hour; a model without a cache discount
    or write premium pays the input price for those tokens."""
    from genai_prices.data_snapshot import get_snapshot

    snapshot = get_snapshot()
    # a routed name (LiteLLM, OpenRouter: "deepseek/deepseek-chat") is also tried as the
    # provider's own model, then as the bare model name
    provider, _, bare = model.rpartition("/")
    tries = [(model, None), (bare, provider), (bare, None)] if provider else [(model, None)]
    for name, provider_id in tries:
        try:
            _, info = snapshot.find_provider_model(name, None, provider_id, None)
            break
        except LookupError:
            continue
    else:
        return None
    table = info.get_prices(
        datetime.combine(datetime.now(UTC).date(), time(PRICE_HOUR, tzinfo=UTC))
    )
    uncached = _per_mtok(table.input_mtok)
    if uncached is None:
        return None
    cached = _per_mtok(table.cache_read_mtok)
    write = _per_mtok(table.cache_write_mtok)
    return Prices(
        input=uncached,
        cached=uncached if cached is None else cached,
        cache_write=uncached if write is None else write,
        output=_per_mtok(table.output_mtok) or 0.0,
    )


def _per_mtok(price: Any) -> float | None:
    """A genai-prices price as a float: a flat Decimal, or the base of tiered prices."""
    if price is None:
        return None
    return float(price if isinstance(price, Decimal) else price.base)


def priced_model(name: str) -> str:
    """The model ``--prices NAME`` prices as: a family's model of ``FAMILY_MODELS``, else the
    name itself."""
    return FAMILY_MODELS.get(name, name)


def prices_for(name: str) -> Prices:
    """The prices ``--prices NAME`` picks: a family of ``FAMILY_MODELS`` or any model
    genai-prices knows; one-line error otherwise."""
    found = model_prices(priced_model(name))
    if found is None:
        known = ", ".join(FAMILY_MODELS)
        raise ContextEngineError(
            f"unknown price family {name!r} (known: {known}, or a model name genai-prices knows)"
        )
    return found


def replay_prices(choice: str, model: str) -> str:
    """What ``--prices choice`` prices a recorded run of ``model`` at: ``choice`` itself, or
    with ``recorded`` the run's model where genai-prices knows it, else the default family."""
    if choice != RECORDED:
        return choice
    return model if model_prices(model) else DEFAULT_FAMILY


def prices_fell_back(choice: str, model: str) -> bool:
    """Whether ``--prices choice`` prices a run of ``model`` at the default family because
    genai-prices does not know the recorded model."""
    return choice == RECORDED and model_prices(model) is None


def usd(amount: float | None) -> str:
    """``$0.0123``, or "price unknown" for a cost that could not be priced."""
    return UNKNOWN_PRICE if amount is None else f"${amount:.4f}"


DEFAULT_CACHE_LIFETIME_S = 300.0
"""An idle prompt cache's life unless the provider asks for longer: Anthropic's default 5
minutes (OpenAI keeps an idle cache 5 to 10 minutes)."""

DEFAULT_CACHE_SHARES = (0.1, 1.25)
"""Cache read and write prices (uncached = 1) of a model genai-prices lacks: Anthropic's
5-minute cache."""


@dataclass(frozen=True)
class CachePolicy:
    """How a provider's prompt cache behaves, as pruning weighs it: how long an idle cache
    lives, and what a cached read and a cache write cost as shares of an uncached token."""

    lifetime_s: float = DEFAULT_CACHE_LIFETIME_S
    read_price: float = DEFAULT_CACHE_SHARES[0]
    write_price: float = DEFAULT_CACHE_SHARES[1]

    @classmethod
    def of_model(cls, model: str, lifetime_s: float = DEFAULT_CACHE_LIFETIME_S) -> CachePolicy:
        """``model``'s own cache prices (genai-prices: DeepSeek reads at about a quarter,
        Gemini and OpenAI write at 1), else ``DEFAULT_CACHE_SHARES``."""
        known = model_prices(model) if model else None
        read, write = (known.cache_shares() if known else None) or DEFAULT_CACHE_SHARES
        return cls(lifetime_s, read, write)

    def overridden(
        self,
        lifetime_s: float | None = None,
        read_price: float | None = None,
        write_price: float | None = None,
    ) -> CachePolicy:
        """This policy with the values a user set instead (``None``: keep its own)."""
        return CachePolicy(
            self.lifetime_s if lifetime_s is None else lifetime_s,
            self.read_price if read_price is None else read_price,
            self.write_price if write_price is None else write_price,
        )
