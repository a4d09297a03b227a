"""deepagents on the task with its built-in tools over the workspace (``LocalShellBackend``:
ls, read_file, write_file, edit_file, delete, glob, grep, execute, task) and LangChain's
``TodoListMiddleware`` for ``write_todos`` (deepagents 0.7 no longer adds it by default):
``driver.py BASE_URL WORKSPACE default|compact``. ``compact`` declares an 8,000-token
window in the model's profile (contextengine's small window), which sets its summarization
middleware's trigger (85% of the window) and what it keeps (10%). A smaller one does not
fit: its own prompt and tools alone are about 5,000 tokens."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deepagents import create_deep_agent
from deepagents.backends import LocalShellBackend
from fwbench import task
from langchain.agents.middleware import TodoListMiddleware
from langchain_openai import ChatOpenAI

WINDOW_TOKENS = 8000
RECURSION_LIMIT = 200


def main() -> None:
    """Run the task once and print the final answer as JSON."""
    base_url, workspace, mode = sys.argv[1:4]
    profile = {"max_input_tokens": WINDOW_TOKENS} if mode == "compact" else None
    model = ChatOpenAI(
        model="fake-model",
        base_url=base_url,
        api_key="sk-fake",
        use_responses_api=False,
        max_retries=0,
        profile=profile,
    )
    agent = create_deep_agent(
        model=model,
        system_prompt=task.INSTRUCTIONS,
        middleware=[TodoListMiddleware()],
        backend=LocalShellBackend(root_dir=workspace, virtual_mode=True, inherit_env=True),
    )
    state = agent.invoke(
        {"messages": [{"role": "user", "content": task.TASK}]},
        config={"recursion_limit": RECURSION_LIMIT},
    )
    print(json.dumps({"final": state["messages"][-1].text}))


if __name__ == "__main__":
    main()
