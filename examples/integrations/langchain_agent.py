"""contextengine inside LangChain v1: an agent middleware rebuilds each model call.

Needs: pip install 'contextengine[langchain]'
"""

import os
import uuid
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from contextengine.integrations.langchain import ContextEngineMiddleware
from contextengine.integrations.mirror import ContextMirror


@tool
def read_log() -> str:
    """Read the nightly job's log."""
    return "".join(f"line {n}: worker_{n % 7} processed batch_{n} ok\n" for n in range(500))


model = ChatOpenAI(
    model=os.environ.get("OPENAI_MODEL", "gpt-5-mini"),
    base_url=os.environ.get("OPENAI_BASE_URL"),  # None: OpenAI's; the key from OPENAI_API_KEY
)
# One folder per conversation (a session is append-only: a used folder is an error).
mirror = ContextMirror(Path(".ce-sessions") / uuid.uuid4().hex[:12])
agent = create_agent(
    model, tools=[read_log, tool(mirror.file_read)], middleware=[ContextEngineMiddleware(mirror)]
)
state = agent.invoke({"messages": [{"role": "user", "content": "Why did the nightly job fail?"}]})
print(state["messages"][-1].content)
