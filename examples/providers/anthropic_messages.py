"""The Anthropic Messages API (``-p anthropic``), with cache breakpoints on every request.

ANTHROPIC_API_KEY=... [ANTHROPIC_BASE_URL=...] [ANTHROPIC_MODEL=...] python examples/providers/anthropic_messages.py
"""

import os
import uuid
from pathlib import Path

from contextengine import ContextBuilder, Session, UserEntry
from contextengine.providers.anthropic import AnthropicProvider

# key and URL from ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL
provider = AnthropicProvider(
    os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"), max_tokens=8192
)
session = Session.create(Path("sessions") / uuid.uuid4().hex[:12])
session.append(UserEntry(text="Say hello in five words."))
request = ContextBuilder(system_prompt="Be brief.").build(session)
reply = provider.complete(request)
print(reply.content, reply.usage)
session.close()
