"""What a tool declares about itself, so rules, compressors and reminders never key on names.

A tool class sets ``traits: ClassVar[ToolTraits]``; the toolset answers ``traits(name)``
for every call. A tool that declares nothing (another harness's, a test's) gets
``UNDECLARED``: no category, low risk, and its history form picked by its name among the
well-known tool names of other harnesses (``contextengine.compress.compressors``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ToolCategory = Literal["read", "write", "exec", "web", "memory", "plan", "other"]
"""read: only looks (counts toward the 2-action rule); write: changes files; exec: runs
commands; web: reaches the network; memory: records a finding; plan: changes the plan."""

Risk = Literal["low", "high", "overwrite"]
"""high: always re-read the plan first; overwrite: only when its ``path`` already exists."""

Compressor = Literal["read", "write", "edit", "ls", "glob", "grep", "shell", "todo", "other"]
"""The history form of a tool's output (``contextengine.compress.compressors``): the
structured form of its ``data`` when it has any, else the text form of the same family."""


@dataclass(frozen=True)
class ToolTraits:
    """How the engine treats a tool's calls: its category, risk, history form and the
    argument its progress line and lessons show as the action (else ``path``/``pattern``)."""

    category: ToolCategory = "other"
    risk: Risk = "low"
    compressor: Compressor | None = None
    action_key: str | None = None


UNDECLARED = ToolTraits()
"""The traits of a tool that declares none."""


def traits_of(tool: object) -> ToolTraits:
    """The traits ``tool`` declares, or ``UNDECLARED``."""
    traits = getattr(tool, "traits", UNDECLARED)
    return traits if isinstance(traits, ToolTraits) else UNDECLARED
