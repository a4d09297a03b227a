"""Tool masks (R2.2): which tools may be called now, without touching the tool list.

A mask allows tools by exact name or by group prefix (an entry ending in ``_`` such as
``file_``); an entry ``@read`` (any category) stands for the tools whose traits declare it,
resolved against the session's tools before the mask is used (``toolkit.modes.MaskRules``). The tools in every request stay the same; providers enforce the mask at
decode time, and the guard refuses any call outside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MaskMode = Literal["auto", "required", "specified"]


@dataclass(frozen=True)
class ToolMask:
    """Allowed tools (``None`` = all) and the call mode.

    ``auto``: the model may answer or call an allowed tool. ``required``: it must call a
    tool. ``specified``: it must call one of the allowed subset.
    """

    allow: tuple[str, ...] | None = None
    mode: MaskMode = "auto"

    @classmethod
    def only(cls, *names_or_prefixes: str, mode: MaskMode = "specified") -> ToolMask:
        """A mask allowing just these names / prefixes."""
        return cls(tuple(names_or_prefixes), mode)

    def allows(self, name: str) -> bool:
        """Whether a call to ``name`` is allowed."""
        if self.allow is None:
            return True
        return any(name.startswith(a) if a.endswith("_") else name == a for a in self.allow)

    def allowed_names(self, names: Iterable[str]) -> tuple[str, ...]:
        """The subset of ``names`` this mask allows, in the given order."""
        return tuple(n for n in names if self.allows(n))

    @property
    def is_open(self) -> bool:
        """True when the mask restricts nothing (all tools, auto mode)."""
        return self.allow is None and self.mode == "auto"
