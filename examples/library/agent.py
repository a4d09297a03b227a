"""The agent as a library: one task in ./ws with a model from the environment.

OPENAI_API_KEY=sk-... [OPENAI_BASE_URL=...] [OPENAI_MODEL=gpt-4.1-mini] python examples/library/agent.py
"""

import os

from contextengine import Agent, Config
from contextengine.providers.openai import OpenAIProvider

# The OpenAI SDK reads OPENAI_API_KEY and OPENAI_BASE_URL (any Chat Completions server).
provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
with Agent(provider=provider, workspace="./ws", config=Config()) as agent:  # closes the log
    result = agent.run("List the workspace and say what is in it.")
print(result.final_answer)
print("session:", result.session_dir)
