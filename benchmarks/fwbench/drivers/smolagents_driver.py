"""smolagents' ``ToolCallingAgent`` on the task: ``driver.py BASE_URL WORKSPACE default``.
It answers through its ``final_answer`` tool and has no compaction."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from fwbench import task
from smolagents import OpenAIServerModel, Tool, ToolCallingAgent
from smolagents.monitoring import LogLevel

MAX_STEPS = 60
INPUTS: dict[str, dict[str, Any]] = {
    "ls": {"path": {"type": "string", "nullable": True}},
    "read_file": {"path": {"type": "string"}},
    "write_file": {"path": {"type": "string"}, "content": {"type": "string"}},
    "edit_file": {
        "path": {"type": "string"},
        "old_text": {"type": "string"},
        "new_text": {"type": "string"},
    },
    "run_shell": {"command": {"type": "string"}},
    "todo": {"todos": {"type": "array"}},
}


def make_tool(workspace: task.Workspace, tool_name: str) -> Tool:
    """One baseline tool as a smolagents ``Tool`` (its API wants a class per tool)."""
    method = getattr(workspace, tool_name)
    inputs = {
        param: {**spec, "description": task.PARAMETERS[param]}
        for param, spec in INPUTS[tool_name].items()
    }

    class Baseline(Tool):
        name = tool_name
        description = task.DESCRIPTIONS[tool_name]
        output_type = "string"
        skip_forward_signature_validation = True

        def forward(self, **kwargs: Any) -> str:
            return method(**{k: v for k, v in kwargs.items() if v is not None})

    Baseline.inputs = inputs
    return Baseline()


def main() -> None:
    """Run the task once and print the final answer as JSON."""
    base_url, workspace = sys.argv[1:3]
    shared = task.Workspace(workspace)
    agent = ToolCallingAgent(
        tools=[make_tool(shared, name) for name in INPUTS],
        model=OpenAIServerModel(model_id="fake-model", api_base=base_url, api_key="sk-fake"),
        instructions=task.INSTRUCTIONS,
        max_steps=MAX_STEPS,
        verbosity_level=LogLevel.OFF,
    )
    print(json.dumps({"final": str(agent.run(task.TASK))}))


if __name__ == "__main__":
    main()
