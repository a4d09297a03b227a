"""LangChain v1 (``create_agent`` with the six baseline tools, ``ChatOpenAI`` on Chat
Completions) on the task: ``driver.py BASE_URL WORKSPACE default|contextengine``.
``contextengine`` adds contextengine's agent middleware
(``contextengine.integrations.langchain``), its session kept beside the workspace."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fwbench import task
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

RECURSION_LIMIT = 200


def main() -> None:
    """Run the task once and print the final answer as JSON."""
    base_url, workspace, mode = sys.argv[1:4]
    model = ChatOpenAI(
        model="fake-model",
        base_url=base_url,
        api_key="sk-fake",
        use_responses_api=False,
        max_retries=0,
    )
    middleware: list[Any] = []
    if mode == "contextengine":
        from contextengine.integrations.langchain import ContextEngineMiddleware
        from contextengine.integrations.mirror import ContextMirror

        middleware.append(ContextEngineMiddleware(ContextMirror(f"{workspace}.ce")))
    tools = [tool(f, parse_docstring=True) for f in task.tool_functions(task.Workspace(workspace))]
    agent = create_agent(model, tools=tools, system_prompt=task.INSTRUCTIONS, middleware=middleware)
    state = agent.invoke(
        {"messages": [{"role": "user", "content": task.TASK}]},
        config={"recursion_limit": RECURSION_LIMIT},
    )
    print(json.dumps({"final": state["messages"][-1].text}))


if __name__ == "__main__":
    main()
