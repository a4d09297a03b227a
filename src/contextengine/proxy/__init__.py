"""A recording pass-through proxy for OpenAI- and Anthropic-compatible model APIs."""
