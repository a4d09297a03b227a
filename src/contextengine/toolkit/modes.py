"""Mode presets (R15) and the state rules that pick the mask in force (R2.2).

A mode is a named ``ToolMask`` over the session's fixed tool list: it changes which tools
may be called, never which tools the request carries. Presets allow groups by prefix, so a
tool added later (``web_fetch``, ``agent_delegate``, ``file_delete``) falls into the modes of
its group. Seed 000 (``ToolAvailabilityMask.TOOL_GROUPS``) names the modes; its tools map
onto ours as respond -> a plain answer, code_execute -> ``shell_``, code_analyze -> the
read-only file tools, web_search / web_fetch -> ``web_``. Every preset is call mode ``auto``
(answering is always allowed, as ``respond`` is in every seed group).

* CHAT: seed ``respond`` only - an answer, no tool at all.
* CODE: seed code_execute + code_analyze - read, edit and run code (``file_``, ``shell_``,
  the code map ``code_``), keep the plan (``todo_``) and the working memory (``memory_``).
* SEARCH: seed web_search + web_fetch - the web tools (``web_``), the plan and memory.
* THINKING: seed web_search + code_analyze - look things up and read the workspace to reason
  about it; plan and memory, but nothing is changed or run.
* KNOWLEDGE: seed web_search - answer from sources (a search, the workspace read-only) and
  keep findings in memory; no plan, no changes.
* DEEP_RESEARCH: seed web_search + web_fetch + code_execute - the web, the workspace, the
  shell, plan, memory and sub-agents (``agent_``): the whole toolbox for a long task.

The state rules (``MaskRules``) are declared here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, Protocol, get_args

from contextengine.errors import ConfigError
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.traits import ToolTraits

ModeName = Literal["CHAT", "CODE", "SEARCH", "THINKING", "KNOWLEDGE", "DEEP_RESEARCH"]
MODE_NAMES: tuple[str, ...] = get_args(ModeName)

CATEGORY_MARK = "@"
"""A mask entry ``@<category>`` stands for every tool whose traits give that category."""

READ = f"{CATEGORY_MARK}read"
"""The tools that only read (``file_read``, ``file_grep``, ``code_map`` ... any tool that
declares category ``read``)."""


class ToolCatalog(Protocol):
    """The tools a mask is resolved against: their names and what each declares."""

    @property
    def names(self) -> tuple[str, ...]:
        """The tool names."""
        ...

    def traits(self, name: str) -> ToolTraits:
        """What the tool called ``name`` declares about itself."""
        ...


NO_TOOLS = ToolMask(allow=(), mode="auto")
"""Answer in text, call nothing (side calls: the compaction summary, the 3-strike reboot)."""

MODES: Mapping[str, ToolMask] = MappingProxyType(
    {
        "CHAT": ToolMask(allow=()),
        "CODE": ToolMask(allow=("file_", "code_", "shell_", "todo_", "memory_")),
        "SEARCH": ToolMask(allow=("web_", "todo_", "memory_")),
        "THINKING": ToolMask(allow=("memory_", "todo_", "web_search", READ)),
        "KNOWLEDGE": ToolMask(allow=(READ, "web_search", "memory_")),
        "DEEP_RESEARCH": ToolMask(
            allow=("web_", "file_", "code_", "shell_", "todo_", "memory_", "agent_")
        ),
    }
)
"""The six presets, name -> mask (seed 000)."""


def mode_mask(name: str) -> ToolMask:
    """The preset called ``name`` (any letter case); ``ConfigError`` naming the six if unknown."""
    mask = MODES.get(name.strip().upper()) if isinstance(name, str) else None
    if mask is None:
        raise ConfigError(f"unknown mode {name!r}; modes: {', '.join(MODE_NAMES)}")
    return mask


def mode_of(mask: ToolMask | None) -> str | None:
    """The preset name of ``mask``, or ``None`` when it is no preset."""
    return next((name for name, preset in MODES.items() if preset == mask), None)


class MaskRules:
    """The mask in force at each step, from the agent's mask (its mode) and its state.

    The rules, in order:

    1. ``masking`` off: no mask at all - the guard runs every known tool and the request
       carries no decode-time constraint (side calls keep ``NO_TOOLS``: their replies are
       read as text).
    2. The 3-strike reboot request and the compaction summary request use ``NO_TOOLS``
       (the agent loop builds them): the reboot's five answers are text and are recorded
       without calls, so a tool allowed there could never run.
    3. Once a plan tool's todo list (``todo_write``) has marked every step done, a mask
       that requires a call relaxes to ``auto``: the model may answer.
    4. Otherwise the agent's mask as set (``agent.mask`` / ``agent.set_mode``).
    """

    def __init__(self, enabled: bool, tools: ToolCatalog) -> None:
        self.enabled = enabled
        self.plan_done = False
        self._tools = tools

    def observe(self, tool_name: str, outcome: ToolOutcome) -> None:
        """Track the plan's state from a plan tool's todo list."""
        plan_tool = self._tools.traits(tool_name).category == "plan"
        if plan_tool and outcome.status == "success" and "todos" in outcome.data:
            todos = outcome.data["todos"] or ()
            self.plan_done = bool(todos) and all(t.get("status") == "done" for t in todos)

    def in_force(self, mask: ToolMask | None) -> ToolMask | None:
        """The mask the next main request and the guard use (category entries resolved
        to the tools that declare them)."""
        if not self.enabled or mask is None:
            return None
        mask = self._resolved(mask)
        if self.plan_done and mask.mode != "auto":
            return ToolMask(mask.allow, "auto")
        return mask

    def _resolved(self, mask: ToolMask) -> ToolMask:
        if mask.allow is None or not any(a.startswith(CATEGORY_MARK) for a in mask.allow):
            return mask
        kept = tuple(a for a in mask.allow if not a.startswith(CATEGORY_MARK))
        declared = tuple(
            name
            for name in self._tools.names
            if CATEGORY_MARK + self._tools.traits(name).category in mask.allow and name not in kept
        )
        return ToolMask(kept + declared, mask.mode)
