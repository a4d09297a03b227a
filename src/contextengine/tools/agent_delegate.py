"""``agent_delegate {task, mode?}`` (R16): a side task run by a child agent in its own session.

The tool only checks its arguments and reports; the child is run by the ``Delegator`` in
``ToolContext.delegate``, which the agent layer provides (tools never make agents). The
child's whole work stays in its own session; the parent gets one compact observation: the
child's final answer, the files it wrote, and its session id (``data["child_session"]``,
which the parent's record keeps as the link to the child).

The tool is not one of the default tools (its definition would be paid on every request of
every session): ``with_agent_delegate`` adds it when the ``subagents`` setting is on or the
session starts in the ``DEEP_RESEARCH`` mode.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.modes import MODE_NAMES
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.delegation import ChildReport, DelegationRefused
from contextengine.tools.registry import Toolset
from contextengine.tools.tool import Tool

CHILD_SESSION = "child_session"
"""The key of the outcome's data naming the child's session id."""


class AgentDelegateTool:
    """``agent_delegate``: run a side task in a sub-agent and get back its answer."""

    name: ClassVar[str] = "agent_delegate"
    traits: ClassVar[ToolTraits] = ToolTraits(compressor="other", action_key="task")
    description: ClassVar[str] = (
        "Run a side task in a sub-agent with its own context; returns its final answer and "
        "the files it wrote. `mode`: " + "|".join(MODE_NAMES) + "."
    )

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        task: str = Field(min_length=1)
        mode: str | None = None

    def run(self, args: AgentDelegateTool.Args, ctx: ToolContext) -> ToolOutcome:
        """Hand the task to the context's delegator and report what the child did."""
        if ctx.delegate is None:
            return ToolOutcome.fail("unavailable", "sub-agents are off in this session")
        mode = args.mode.strip().upper() if args.mode else None
        if mode is not None and mode not in MODE_NAMES:
            return ToolOutcome.fail(
                "invalid_arguments",
                f"unknown mode {args.mode!r}; modes: {', '.join(MODE_NAMES)}",
            )
        try:
            child = ctx.delegate.delegate(args.task, mode)
        except DelegationRefused as exc:
            return ToolOutcome.fail("limit_reached", str(exc))
        data = {
            CHILD_SESSION: child.session_id,
            "status": child.status,
            "answer": child.answer,
            "paths": list(child.paths),
            "steps": child.steps,
        }
        text = observation(child)
        if child.status != "completed":
            return ToolOutcome.fail("subagent_failed", text, data=data)
        return ToolOutcome.ok(text, data)


def observation(child: ChildReport) -> str:
    """The one compact observation the parent sees."""
    written = ", ".join(child.paths) if child.paths else "none"
    if child.status == "completed":
        head = f"Sub-agent {child.session_id} finished in {child.steps} steps."
        return f"{head}\nFiles written: {written}\nAnswer:\n{child.answer}"
    reason = f": {child.error}" if child.error else ""
    return (
        f"Sub-agent {child.session_id} stopped without an answer ({child.status}{reason}) "
        f"after {child.steps} steps.\nFiles written: {written}"
    )


def with_agent_delegate(toolset: Toolset) -> Toolset:
    """``toolset`` plus ``agent_delegate``."""
    tools: list[Tool[Any]] = [t for name in toolset.names if (t := toolset.get(name)) is not None]
    return Toolset([*tools, AgentDelegateTool()])
