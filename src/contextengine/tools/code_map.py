"""``code_map`` (R17): the workspace's ranked code map, focused where the model asks.

The map comes from the session's ``CodeMap`` (``ToolContext.code_map``, set when the
``code_map`` setting is on). Without a focus it centres on the files this session read
or wrote; a focus item that names a workspace file centres on that file, any other item
on that name. The outcome is of kind ``file``: a map within the usual budget stays in
context verbatim, a much larger one is saved and referenced like a long file.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.codemap import CodeMapUnavailable, Focus
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset

MIN_TOKENS = 64
MAX_TOKENS = 16_384


class CodeMapTool:
    """``code_map``: the most-used definitions of the workspace's code, with their lines."""

    name: ClassVar[str] = "code_map"
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="other")
    description: ClassVar[str] = (
        "Map of the workspace's code: the definitions (classes, functions, methods) most "
        "used across files, with path and line, ranked by references. `focus`: files or "
        "names to centre it on (default: the files you read or wrote)."
    )

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        focus: list[str] = Field(default_factory=list)
        max_tokens: int | None = Field(None, ge=MIN_TOKENS, le=MAX_TOKENS)

    def run(self, args: CodeMapTool.Args, ctx: ToolContext) -> ToolOutcome:
        """Build the map for ``args.focus`` within ``args.max_tokens`` (default: the budget)."""
        if ctx.code_map is None:
            return ToolOutcome.fail("unavailable", "the code map is off (setting code_map)")
        if args.focus:
            focus = Focus.of(ctx.workspace, args.focus)
        else:
            focus = Focus(frozenset(ctx.workspace.display(Path(r)) for r in ctx.read_mtimes))
        try:
            view = ctx.code_map.build(args.max_tokens, focus.files, focus.names)
        except CodeMapUnavailable as exc:
            return ToolOutcome.fail("unavailable", str(exc))
        head = f"Code map ({view.summary()}; focus: {focus.describe()}; line│source):"
        body = view.text or "(no definitions found in the workspace's Python/JS/TS files)"
        data = {
            "focus_files": sorted(focus.files),
            "focus_names": list(focus.names),
            "definitions_shown": view.definitions_shown,
            "definitions_total": view.definitions_total,
            "files_shown": view.files_shown,
            "files_parsed": view.files_parsed,
            "tokens": view.tokens,
        }
        return ToolOutcome.ok(f"{head}\n{body}", data, kind="file")


def with_code_map(toolset: Toolset) -> Toolset:
    """``toolset`` plus ``code_map``."""
    return toolset.plus(CodeMapTool())
