"""contextengine inside pydantic-ai: the ContextEngine capability rebuilds each request.

Needs: pip install 'contextengine[pydantic-ai]'
"""

import os
import uuid
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel

from contextengine.integrations.mirror import ContextMirror
from contextengine.integrations.pydantic_ai import ContextEngine


def read_log() -> str:
    """Read the nightly job's log."""
    return "".join(f"line {n}: worker_{n % 7} processed batch_{n} ok\n" for n in range(500))


# One folder per conversation (a session is append-only: a used folder is an error).
mirror = ContextMirror(Path(".ce-sessions") / uuid.uuid4().hex[:12])
model = OpenAIChatModel(os.environ.get("OPENAI_MODEL", "gpt-5-mini"))  # OPENAI_BASE_URL, _API_KEY
agent = Agent(model, tools=[read_log, mirror.file_read], capabilities=[ContextEngine(mirror)])
print(agent.run_sync("Why did the nightly job fail?").output)
