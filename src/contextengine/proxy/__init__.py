"""A recording pass-through proxy for OpenAI- and Anthropic-compatible model APIs."""

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest request body the proxy passes on by default (vendors' own limits are lower)."""
