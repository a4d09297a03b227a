"""``web_search`` (R14.1): ranked results from the session's search backend
(``contextengine.tools.search_backend``). ``web_search_backend = none`` leaves the tool in
the list (the tool list is part of the cached prefix) and every call returns an
``unavailable`` error saying how to configure one.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.web_http import WebRefused


class WebSearch:
    """``web_search``: ranked results (title, URL, snippet) from the configured backend."""

    name: ClassVar[str] = "web_search"
    traits: ClassVar[ToolTraits] = ToolTraits(category="web", compressor="other")
    description: ClassVar[str] = "Search the web: numbered results (title, URL, snippet)."
    max_results: ClassVar[int] = 8

    class Args(BaseModel):
        model_config = ConfigDict(extra="forbid")

        query: str = Field(min_length=1)

    def run(self, args: WebSearch.Args, ctx: ToolContext) -> ToolOutcome:
        """Ask the session's backend."""
        backend = ctx.search
        if backend is None:
            return ToolOutcome.fail(
                "unavailable",
                "web_search has no backend; set web_search_backend (searxng or brave)",
            )
        try:
            results = backend.search(args.query, self.max_results, ctx.web)
        except WebRefused as exc:
            return ToolOutcome.fail(exc.code, f"web_search ({backend.name}): {exc}")
        lines = [f"{len(results)} results for {args.query!r}:"] if results else []
        for number, hit in enumerate(results, 1):
            lines.append(f"{number}. {hit.title or hit.url}\n   {hit.url}")
            if hit.snippet:
                lines.append(f"   {hit.snippet}")
        text = "\n".join(lines) or f"No results for {args.query!r}."
        data = {
            "query": args.query,
            "backend": backend.name,
            "results": [asdict(hit) for hit in results],
        }
        return ToolOutcome.ok(text, data)
