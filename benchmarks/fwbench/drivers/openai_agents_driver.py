"""openai-agents on the task (Chat Completions model, tracing off):
``driver.py BASE_URL WORKSPACE default|contextengine``. The SDK has no compaction for Chat
Completions. ``contextengine`` runs with contextengine's input filter
(``contextengine.integrations.openai_agents``), its session kept beside the workspace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from fwbench import task
from openai import AsyncOpenAI

MAX_TURNS = 60


def main() -> None:
    """Run the task once and print the final answer as JSON."""
    base_url, workspace, mode = sys.argv[1:4]
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key="sk-fake", max_retries=0)
    agent = Agent(
        name="coder",
        instructions=task.INSTRUCTIONS,
        model=OpenAIChatCompletionsModel(model="fake-model", openai_client=client),
        tools=[function_tool(f) for f in task.tool_functions(task.Workspace(workspace))],
    )
    run_config = None
    if mode == "contextengine":
        from contextengine.integrations.mirror import ContextMirror
        from contextengine.integrations.openai_agents import run_config as ce_run_config

        run_config = ce_run_config(ContextMirror(f"{workspace}.ce"))
    result = Runner.run_sync(agent, task.TASK, max_turns=MAX_TURNS, run_config=run_config)
    print(json.dumps({"final": result.final_output}))


if __name__ == "__main__":
    main()
