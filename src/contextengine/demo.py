"""An offline demo: a scripted coding session run by the real agent loop.

No model and no network: ``ScriptedProvider`` plays the model, the tools really run in a
temporary workspace, and each step's request is measured by the prefix monitor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from contextengine.agent.events import AgentEvent
from contextengine.agent.loop import Agent
from contextengine.providers.base import Provider
from contextengine.providers.scripted import ScriptedProvider

DEMO_SCRIPT: list[dict] = [
    {
        "content": "I'll plan first.",
        "tool_calls": [
            {
                "name": "todo_write",
                "arguments": {
                    "todos": [
                        {"content": "Write greet.py", "status": "in_progress"},
                        {"content": "Run it", "status": "pending"},
                    ]
                },
            }
        ],
    },
    {
        "content": "Writing the script.",
        "tool_calls": [
            {
                "name": "file_write",
                "arguments": {"path": "greet.py", "content": "print('hello, ' + nme)\n"},
            }
        ],
    },
    {
        "content": "Running it.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": "python3 greet.py"}}],
    },
    {
        "content": "NameError: fixing the typo.",
        "tool_calls": [
            {
                "name": "file_edit",
                "arguments": {
                    "path": "greet.py",
                    "old_text": "print('hello, ' + nme)",
                    "new_text": "name = 'world'\nprint('hello, ' + name)",
                },
            }
        ],
    },
    {
        "content": "Running it again.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": "python3 greet.py"}}],
    },
    {
        "content": "Marking the plan done.",
        "tool_calls": [
            {
                "name": "todo_write",
                "arguments": {
                    "todos": [
                        {"content": "Write greet.py", "status": "done"},
                        {"content": "Run it", "status": "done"},
                    ]
                },
            }
        ],
    },
    {
        "content": "greet.py now prints 'hello, world': the first run failed with a NameError, which I fixed and re-ran."
    },
]


def run_demo(
    workspace: Path, new_agent: Callable[[Provider, Path], Agent]
) -> tuple[Agent, Iterator[AgentEvent]]:
    """Start the scripted demo session in ``workspace`` with the agent ``new_agent`` makes
    (``Agent`` with the caller's config); returns the agent and its events."""
    agent = new_agent(ScriptedProvider(DEMO_SCRIPT, model="scripted-demo"), workspace)
    return agent, agent.stream("Create greet.py that greets the world, and run it.")
