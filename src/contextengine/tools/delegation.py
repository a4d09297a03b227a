"""What a session plugs into ``agent_delegate``: the ``Delegator`` that runs a child agent
(the agent layer provides it; tools never make agents) and the report it hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ChildReport:
    """What a finished child agent hands back: its session, how it ended, its answer and
    the workspace paths it wrote."""

    session_id: str
    status: str
    answer: str
    paths: tuple[str, ...] = ()
    steps: int = 0
    error: str | None = None


class DelegationRefused(Exception):
    """A delegation that may not run (a depth limit); its message is the observation."""


class Delegator(Protocol):
    """Runs a child agent for a task, to its end, and reports."""

    def delegate(self, task: str, mode: str | None) -> ChildReport:
        """The child's report; raises ``DelegationRefused`` when no child may start."""
        ...
