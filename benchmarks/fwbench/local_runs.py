"""The runs in this venv: a plain append-only chat loop and contextengine's three setups.

``peer_toolset`` registers the six baseline tools of ``task.py`` through contextengine's
public tool protocol (a name, a description, a pydantic ``Args`` model and ``run``), so
the "peer tools" setup differs from the peers only in what contextengine itself adds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import openai
from pydantic import BaseModel, Field

from contextengine import Agent, Config
from contextengine.providers.openai import OpenAIProvider
from contextengine.toolkit.base import ToolOutcome
from contextengine.tools.registry import Toolset
from fwbench import task

API_KEY = "sk-fake"
MODEL = "fake-model"


class _BaselineTool:
    """A ``task.Workspace`` method as a contextengine tool; failures are error outcomes."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]

    def __init__(self, workspace: task.Workspace) -> None:
        self.workspace = workspace

    def run(self, args: BaseModel, ctx: Any) -> ToolOutcome:
        """Call the shared implementation with the validated arguments."""
        text = getattr(self.workspace, self.name)(**args.model_dump())
        if text.startswith("error:"):
            return ToolOutcome.fail("not_found" if "not found" in text else "no_match", text)
        status = text.partition("\n")[0]
        if status.startswith("exit code: ") and status != "exit code: 0":
            return ToolOutcome.fail("nonzero_exit", text)
        return ToolOutcome.ok(text)


class Ls(_BaselineTool):
    """``ls``."""

    name: ClassVar[str] = "ls"
    description: ClassVar[str] = task.DESCRIPTIONS["ls"]

    class Args(BaseModel):
        path: str = Field(".", description=task.PARAMETERS["path"])


class ReadFile(_BaselineTool):
    """``read_file``."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = task.DESCRIPTIONS["read_file"]

    class Args(BaseModel):
        path: str = Field(description=task.PARAMETERS["path"])


class WriteFile(_BaselineTool):
    """``write_file``."""

    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = task.DESCRIPTIONS["write_file"]

    class Args(BaseModel):
        path: str = Field(description=task.PARAMETERS["path"])
        content: str = Field(description=task.PARAMETERS["content"])


class EditFile(_BaselineTool):
    """``edit_file``."""

    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = task.DESCRIPTIONS["edit_file"]

    class Args(BaseModel):
        path: str = Field(description=task.PARAMETERS["path"])
        old_text: str = Field(description=task.PARAMETERS["old_text"])
        new_text: str = Field(description=task.PARAMETERS["new_text"])


class RunShell(_BaselineTool):
    """``run_shell``."""

    name: ClassVar[str] = "run_shell"
    description: ClassVar[str] = task.DESCRIPTIONS["run_shell"]

    class Args(BaseModel):
        command: str = Field(description=task.PARAMETERS["command"])


class Todo(_BaselineTool):
    """``todo``."""

    name: ClassVar[str] = "todo"
    description: ClassVar[str] = task.DESCRIPTIONS["todo"]

    class Args(BaseModel):
        todos: list[task.TodoItem] = Field(description=task.PARAMETERS["todos"])


def peer_toolset(workspace: Path) -> Toolset:
    """The six baseline tools over ``workspace`` as a contextengine ``Toolset``."""
    shared = task.Workspace(workspace)
    return Toolset([cls(shared) for cls in (Ls, ReadFile, WriteFile, EditFile, RunShell, Todo)])


def openai_tools() -> list[dict[str, Any]]:
    """The baseline tools as Chat Completions tool definitions (for the plain loop)."""
    tools = peer_toolset(Path(".")).specs()
    by_name = {spec.name: spec for spec in tools}
    order = ("ls", "read_file", "write_file", "edit_file", "run_shell", "todo")
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": by_name[name].description,
                "parameters": dict(by_name[name].parameters),
            },
        }
        for name in order
    ]


def run_plain_chat(base_url: str, workspace: Path, max_steps: int = 60) -> str:
    """A plain append-only chat loop: system, task, then every reply and result in order."""
    client = openai.OpenAI(api_key=API_KEY, base_url=base_url, max_retries=0)
    shared = task.Workspace(workspace)
    tools = openai_tools()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": task.INSTRUCTIONS},
        {"role": "user", "content": task.TASK},
    ]
    for _ in range(max_steps):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        message = reply.choices[0].message
        calls = message.tool_calls or []
        messages.append(message.model_dump(exclude_none=True, exclude_unset=True))
        if not calls:
            return message.content or ""
        for call in calls:
            arguments = json.loads(call.function.arguments)
            result = getattr(shared, call.function.name)(**arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return ""


SESSION_ID = "fwbench"


def run_contextengine(
    base_url: str,
    workspace: Path,
    *,
    peer_tools: bool = False,
    context_window: int | None = None,
) -> str:
    """One contextengine ``Agent`` turn on the task with default settings (sessions in
    the workspace's ``.contextengine``), optionally the baseline tools or a smaller window."""
    config = Config() if context_window is None else Config(context_window=context_window)
    provider = OpenAIProvider(MODEL, api_key=API_KEY, base_url=base_url, max_retries=0)
    agent = Agent(
        provider,
        workspace,
        config,
        tools=peer_toolset(workspace) if peer_tools else None,
        # a fixed id: observation templates follow it (R6.1), so every run prices the same
        session_id=SESSION_ID,
    )
    result = agent.run(task.TASK)
    return result.final_answer
