"""The overhead allowance (#38): what a session's optional overheads may cost.

The task-status tail and the 3-strike reboot help a long run keep its course; a short or
error-heavy run pays them with nothing to pay them back (a reboot side call of a run
without a cached system prompt reads almost nothing from the cache). So they are paid
from an allowance: together they may cost at most ``overhead_share`` of what the
session's requests have cost without them so far. Costs are in price units (an uncached
input token is 1, a cache read ``read``, a cache write ``write``), taken from each call's
reported usage, so whenever a run ends it is at most that share dearer than a plain chat
for them. An overhead the allowance cannot pay yet waits: the tail until the run has
cost enough, a reboot until then too (its strikes stay counted).
"""

from __future__ import annotations

from contextengine.types import Usage

OVERHEAD_PURPOSES = frozenset({"reboot"})
"""Side calls that are optional overheads (a compaction summary is not: the window needs it)."""


class Allowance:
    """The running cost of one session's calls and what its optional overheads took."""

    def __init__(self, share: float | None, read: float, write: float) -> None:
        self.share = share  # None: no limit
        self.read = read
        self.write = write
        self.spent = 0.0  # every call so far, overheads included
        self.paid = 0.0  # the overheads among them

    def cost(self, usage: Usage) -> float:
        """The input cost of a call's ``usage`` in price units."""
        uncached = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
        return (
            max(0, uncached)
            + self.read * usage.cached_tokens
            + self.write * (usage.cache_write_tokens)
        )

    def observe(self, purpose: str, usage: Usage) -> None:
        """Add a call's cost; a side call of ``OVERHEAD_PURPOSES`` is an overhead paid."""
        cost = self.cost(usage)
        self.spent += cost
        if purpose in OVERHEAD_PURPOSES:
            self.paid += cost

    def affords(self, cost: float) -> bool:
        """Whether an overhead of ``cost`` fits: all paid so far and it stay within the
        share of what the calls cost without them."""
        if self.share is None:
            return True
        return self.paid + cost <= self.share * (self.spent - self.paid)

    def pay(self, cost: float) -> None:
        """Record an overhead carried inside a main request (the tail: paid uncached)."""
        self.paid += cost
