"""Token counts for measurement: the engine's BPE counter (``o200k_base``)."""

from __future__ import annotations

from contextengine.context.tokens import ENCODING, TokenCounter

__all__ = ["ENCODING", "TokenCounter"]
