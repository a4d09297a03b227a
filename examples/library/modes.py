"""Modes: a mask over the fixed tool list, switched without breaking the cached prefix."""

import os

from contextengine import Agent, Config
from contextengine.providers.openai import OpenAIProvider

provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
with Agent(provider, "./ws", Config(), mode="CHAT") as agent:
    agent.run("List the files.")  # in CHAT a tool call is refused with a masked_tool observation
    agent.set_mode("CODE")  # from the next step on
    print(agent.mode, agent.stats()["tool_errors"])  # e.g. CODE {'masked_tool': 1}
