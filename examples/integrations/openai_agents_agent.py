"""contextengine inside the OpenAI Agents SDK: an input filter rebuilds each model call.

Needs: pip install 'contextengine[openai-agents]'
"""

import os
import uuid
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from contextengine.integrations.mirror import ContextMirror
from contextengine.integrations.openai_agents import run_config


def read_log() -> str:
    """Read the nightly job's log."""
    return "".join(f"line {n}: worker_{n % 7} processed batch_{n} ok\n" for n in range(500))


set_tracing_disabled(True)  # traces would go to OpenAI's platform, whatever the base URL
# The filter works on Chat Completions input; the client reads OPENAI_BASE_URL, OPENAI_API_KEY.
model = OpenAIChatCompletionsModel(
    model=os.environ.get("OPENAI_MODEL", "gpt-5-mini"), openai_client=AsyncOpenAI()
)
# One folder per conversation (a session is append-only: a used folder is an error).
mirror = ContextMirror(Path(".ce-sessions") / uuid.uuid4().hex[:12])
agent = Agent(
    name="ops", model=model, tools=[function_tool(read_log), function_tool(mirror.file_read)]
)
result = Runner.run_sync(agent, "Why did the nightly job fail?", run_config=run_config(mirror))
print(result.final_output)
