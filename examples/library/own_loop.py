"""Only the request builder, in your own loop: append entries, build, send, append the reply."""

import os
import uuid
from pathlib import Path

from contextengine import AssistantEntry, ContextBuilder, Session, UserEntry
from contextengine.providers.openai import OpenAIProvider

provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
builder = ContextBuilder(system_prompt="You are a concise assistant.")
# A session is an append-only folder: one per conversation.
session = Session.create(Path("sessions") / uuid.uuid4().hex[:12])
for question in ("Name a prime number.", "And one more?"):
    session.append(UserEntry(text=question))
    request = builder.build(session)  # request.messages, request.tools, request.breakpoints
    reply = provider.complete(request)
    session.append(AssistantEntry(text=reply.content))
    print(question, "->", reply.content)
session.close()
