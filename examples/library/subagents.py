"""Sub-agents: agent_delegate runs a side task in a child session with its own context."""

import os

from contextengine import Agent, Config
from contextengine.providers.openai import OpenAIProvider

provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
# subagents=True offers agent_delegate (a session started in DEEP_RESEARCH always has it).
with Agent(provider, "./ws", Config(subagents=True)) as agent:
    result = agent.run("Delegate writing notes.md (one line: hi), then say what was written.")
print(result.final_answer)
