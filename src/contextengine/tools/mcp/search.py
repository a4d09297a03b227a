"""Deferred MCP tool definitions (R18.2): ``tool_search`` and ``tool_call``.

Over the definition budget, the MCP tools are not listed one by one in every request.
These two fixed tools stand in for all of them, so the request's ``tools`` are the same
bytes for the whole session whatever the model finds: ``tool_search`` returns the full
definitions of the best matches (BM25 over names and descriptions, or a regular
expression), which enter history like any result and are cached from then on;
``tool_call`` runs any of them by its exact name, found by a search or not, its
arguments checked against that tool's schema.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from contextengine.canonical import canonical_json
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.mcp.adapter import McpTool

SEARCH_LIMIT = 5
BM25_K1 = 1.2
BM25_B = 0.75
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_REGEX_CHARS = frozenset("^$*+?[](){}|\\")


def words(text: str) -> list[str]:
    """Lower-case words of ``text``; ``snake_case``, ``kebab-case`` and ``camelCase``
    split into their parts."""
    return _WORD.findall(_CAMEL.sub(" ", text).lower())


class ToolCatalog:
    """The MCP tools of a session, searchable by their names and descriptions."""

    def __init__(self, tools: Sequence[McpTool]) -> None:
        self.tools = {tool.name: tool for tool in sorted(tools, key=lambda t: t.name)}
        self._docs = {name: words(f"{name} {t.description}") for name, t in self.tools.items()}
        count = max(len(self._docs), 1)
        self._average = sum(len(d) for d in self._docs.values()) / count
        frequency = Counter(word for doc in self._docs.values() for word in set(doc))
        self._idf = {
            word: math.log(1 + (count - n + 0.5) / (n + 0.5)) for word, n in frequency.items()
        }

    def search(self, query: str, limit: int = SEARCH_LIMIT) -> list[McpTool]:
        """The tools best matching ``query``: an exact name first, then BM25 over names and
        descriptions; a query with regex characters that compiles matches as a regex (the
        matching tools by name)."""
        query = query.strip()
        exact = [t for n, t in self.tools.items() if query in (n, t.source.name)]
        pattern = _regex(query)
        if pattern is not None:
            ranked = [
                t
                for n, t in self.tools.items()
                if pattern.search(n) or pattern.search(t.description)
            ]
        else:
            scored = [(self._score(words(query), name), name) for name in self.tools]
            ranked = [
                self.tools[n] for s, n in sorted(scored, key=lambda p: (-p[0], p[1])) if s > 0
            ]
        return list(dict.fromkeys([*exact, *ranked]))[:limit]

    def _score(self, query: list[str], name: str) -> float:
        doc = self._docs[name]
        counts = Counter(doc)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / (self._average or 1))
        return sum(
            self._idf.get(word, 0.0) * counts[word] * (BM25_K1 + 1) / (counts[word] + norm)
            for word in set(query)
            if word in counts
        )


def _regex(query: str) -> re.Pattern[str] | None:
    if not _REGEX_CHARS & set(query):
        return None
    try:
        return re.compile(query, re.IGNORECASE)
    except re.error:
        return None


def definition(tool: McpTool) -> str:
    """A tool's full definition, one line of canonical JSON."""
    return canonical_json(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    )


class ToolSearch:
    """``tool_search``: the full definitions of the MCP tools matching a query."""

    name: ClassVar[str] = "tool_search"
    description: ClassVar[str] = (
        "Find tools of the connected MCP servers ({servers}; {count} tools) by keywords or a "
        "regular expression over their names and descriptions. Returns the full definitions "
        "(name, description, parameters) of the best matches; run one with tool_call."
    )
    traits: ClassVar[ToolTraits] = ToolTraits(category="other", action_key="query")

    class Args(BaseModel):
        """tool_search arguments."""

        query: str = Field(min_length=1, description="Keywords, a tool name or a regex.")
        limit: int = Field(SEARCH_LIMIT, ge=1, le=20, description="Most tools to return.")

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog

    @classmethod
    def offering(cls, catalog: ToolCatalog, servers: Sequence[str]) -> ToolSearch:
        """The search over ``catalog``, its description naming ``servers`` and the tool
        count (made once, at session start: the same bytes all session)."""
        text = cls.description.format(servers=", ".join(servers), count=len(catalog.tools))
        subclass = type(cls.__name__, (cls,), {"description": text})
        search: ToolSearch = subclass(catalog)
        return search

    def run(self, args: ToolSearch.Args, ctx: ToolContext) -> ToolOutcome:
        """The matching definitions, one per line (or what to try when none match)."""
        found = self._catalog.search(args.query, args.limit)
        if not found:
            return ToolOutcome.ok(
                f"no MCP tool matches {args.query!r}; try other keywords or a shorter regex"
            )
        return ToolOutcome.ok("\n".join(definition(tool) for tool in found))


class ToolCall:
    """``tool_call``: run an MCP tool by its exact name."""

    name: ClassVar[str] = "tool_call"
    description: ClassVar[str] = (
        "Run a tool of the connected MCP servers by its exact name (as tool_search returns "
        "it, mcp__<server>__<tool>) with arguments that fit its parameters."
    )
    traits: ClassVar[ToolTraits] = ToolTraits(category="other", action_key="name")

    class Args(BaseModel):
        """tool_call arguments."""

        name: str = Field(min_length=1, description="The tool's exact name.")
        arguments: dict[str, Any] | str = Field(
            default_factory=dict, description="The tool's arguments, a JSON object."
        )

    def __init__(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog

    def traits_of_call(self, arguments: dict[str, Any]) -> ToolTraits:
        """The traits of the tool a call runs (a destructive one is high-risk, R8.2)."""
        tool = self._catalog.tools.get(str(arguments.get("name", "")))
        return tool.traits if tool is not None else self.traits

    def run(self, args: ToolCall.Args, ctx: ToolContext) -> ToolOutcome:
        """Check the arguments against the tool's schema, then call it."""
        tool = self._catalog.tools.get(args.name)
        if tool is None:
            near = ", ".join(t.name for t in self._catalog.search(args.name, 3)) or "(none)"
            return ToolOutcome.fail(
                "unknown_tool",
                f"no MCP tool is called {args.name!r}; find one with tool_search "
                f"(closest names: {near})",
            )
        arguments: Any = args.arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return ToolOutcome.fail(
                    "invalid_arguments", f"arguments of {tool.name} are not JSON ({exc})"
                )
        if not isinstance(arguments, dict):
            return ToolOutcome.fail(
                "invalid_arguments", f"arguments of {tool.name} must be a JSON object"
            )
        return tool.call(arguments)
