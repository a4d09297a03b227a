"""OpenAI Chat Completions (``-p openai-chat``): extra keyword arguments go in every request."""

import os
import uuid
from pathlib import Path

from contextengine import ContextBuilder, Session, UserEntry
from contextengine.providers.openai import OpenAIProvider

# key and URL from OPENAI_API_KEY / OPENAI_BASE_URL
provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"), temperature=0)
session = Session.create(Path("sessions") / uuid.uuid4().hex[:12])
session.append(UserEntry(text="Say hello in five words."))
request = ContextBuilder(system_prompt="Be brief.").build(session)
reply = provider.complete(request)
print(reply.content, reply.usage)
session.close()
