"""The OpenAI Responses API (``-p openai``): generation settings and 24-hour cache retention."""

import os
import uuid
from pathlib import Path

from contextengine import ContextBuilder, Session, UserEntry
from contextengine.providers.openai_responses import OpenAIResponsesProvider
from contextengine.providers.wire import Generation

provider = OpenAIResponsesProvider(
    os.environ.get("OPENAI_MODEL", "gpt-5-mini"),
    generation=Generation(max_tokens=4000, reasoning_effort="low"),
    prompt_cache_retention="24h",
)  # key and URL from OPENAI_API_KEY / OPENAI_BASE_URL
session = Session.create(Path("sessions") / uuid.uuid4().hex[:12])
session.append(UserEntry(text="Say hello in five words."))
request = ContextBuilder(system_prompt="Be brief.").build(session)
reply = provider.complete(request)
print(reply.content, reply.usage)
session.close()
