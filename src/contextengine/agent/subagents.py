"""Sub-agents (R16): the child agents ``agent_delegate`` runs, each in its own session.

A child is a full agent: its own session folder next to its parent's (``session.json``
names the parent), its own working memory and its own cached prefix, the parent's provider
object (so one scripted provider drives parent and child in the order they ask) and the
parent's tools (the same definitions, so the child's prefix starts as the parent's). It
runs its task as one turn to its end within ``delegate_max_steps``; how deep children may
nest is ``max_delegate_depth``, counted along the ``parent`` links of the session folders.
A child shares its parent turn's cancel token: stopping the parent stops the child before
its next step, and the parent after the delegation's observation.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from contextengine.agent.events import RunResult
from contextengine.agent.parts import AgentParts, ToolRunner
from contextengine.session.entries import AssistantEntry, ToolResultEntry
from contextengine.session.meta import ProviderChoice, read_meta
from contextengine.session.session import Session
from contextengine.tools.delegation import ChildReport, DelegationRefused


@dataclass(frozen=True)
class DelegateSettings:
    """Delegation's settings (``Config`` fields of the same names)."""

    max_delegate_depth: int = 1


ChildParts = Callable[[ProviderChoice | None], AgentParts]
"""The parts of a new child of the parent (``AgentParts.child``), given the parent's
provider choice, so a resume of the child chooses the same provider."""


class ParentAgent(Protocol):
    """What a delegating agent lends its children."""

    session: Session
    toolset: ToolRunner
    cancel_token: threading.Event | None  # the running turn's (None between turns)

    @property
    def mode(self) -> str | None:
        """The preset the parent works in."""
        ...


class ChildAgent(Protocol):
    """A started child: its session, one turn, and closing it."""

    session: Session

    def run(self, message: str, cancel: threading.Event | None = None) -> RunResult:
        """Run the task to its final answer, or until ``cancel`` is set."""
        ...

    def close(self) -> None:
        """Release the child's session log."""
        ...


class StartChild(Protocol):
    """Makes the child agent from its parts (``Agent.from_parts``)."""

    def __call__(self, parts: AgentParts, *, mode: str | None = None) -> ChildAgent:
        """The child agent, working in preset ``mode``."""
        ...


class SubAgents:
    """The ``Delegator`` of one agent: starts, runs and reports its children."""

    def __init__(
        self,
        parent: ParentAgent,
        start: StartChild,
        child_parts: ChildParts,
        settings: DelegateSettings,
    ) -> None:
        self._parent = parent
        self._start = start
        self._child_parts = child_parts
        self._settings = settings

    def delegate(self, task: str, mode: str | None) -> ChildReport:
        """Run ``task`` in a new child session (in ``mode``, else the parent's) and report."""
        parent = self._parent
        limit = self._settings.max_delegate_depth
        depth = delegation_depth(parent.session.directory)
        if depth >= limit:
            raise DelegationRefused(
                f"this agent is a sub-agent at depth {depth} and max_delegate_depth is "
                f"{limit}: it cannot delegate; do the task yourself"
            )
        meta = read_meta(parent.session.directory)
        parts = self._child_parts(meta.provider if meta is not None else None)
        child = self._start(parts, mode=mode or parent.mode)
        try:
            result = child.run(task, parent.cancel_token)
            return ChildReport(
                session_id=child.session.id,
                status=result.status,
                answer=result.final_answer,
                paths=written_paths(child.session, parent.toolset),
                steps=result.steps,
                error=result.error,
            )
        finally:
            child.close()


def delegation_depth(session_dir: Path) -> int:
    """How many ``parent`` links lead up from the session (0: a top-level session).

    A child's folder is a sibling of its parent's; a missing parent ends the chain.
    """
    depth = 0
    seen = {session_dir.name}
    meta = read_meta(session_dir)
    while meta is not None and meta.parent is not None and meta.parent not in seen:
        depth += 1
        seen.add(meta.parent)
        meta = read_meta(session_dir.parent / meta.parent)
    return depth


def written_paths(session: Session, tools: ToolRunner) -> tuple[str, ...]:
    """The ``path`` arguments of the session's successful calls of writing tools, in order."""
    calls: dict[str, tuple[str, str]] = {}
    paths: list[str] = []
    for record in session.records:
        entry = record.entry
        if isinstance(entry, AssistantEntry):
            calls.update((c.id, (c.name, c.arguments_json)) for c in entry.tool_calls)
        elif isinstance(entry, ToolResultEntry) and entry.status == "success":
            name, arguments = calls.get(entry.call_id, ("", "{}"))
            if tools.traits(name).category != "write":
                continue
            path = _path_of(arguments)
            if path is not None and path not in paths:
                paths.append(path)
    return tuple(paths)


def _path_of(arguments_json: str) -> str | None:
    try:
        path = json.loads(arguments_json).get("path")
    except (ValueError, AttributeError):
        return None
    return path if isinstance(path, str) else None
