"""The MCP servers of a session, started and turned into tools (R18).

``attach_mcp`` starts the servers, makes a tool of each tool they list, and decides how
they are offered: one by one while their definitions fit the budget, else through the
fixed ``tool_search`` / ``tool_call`` pair (``search="engine"``), or still one by one but
named in ``provider_deferred`` so a provider with its own tool search (Anthropic's
``defer_loading``) keeps them out of the prompt until the model finds them
(``search="anthropic"``). Either way the choice is made once, at session start, so every
request of the session carries the same tools (R2.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.toolkit.mcp_servers import McpServer, McpToolSearch
from contextengine.tools.mcp.adapter import McpTool
from contextengine.tools.mcp.clients import McpClients, McpStartError
from contextengine.tools.mcp.search import ToolCall, ToolCatalog, ToolSearch
from contextengine.tools.tool import Tool


@dataclass(frozen=True)
class McpAttachment:
    """The running servers of a session and the tools that stand for them."""

    clients: McpClients
    tools: tuple[Tool[Any], ...]
    catalog: ToolCatalog
    deferred: bool  # over the budget: behind a tool search (the engine's or the provider's)
    provider_deferred: frozenset[str] = frozenset()  # listed, for the provider to defer

    def close(self) -> None:
        """Close every server session (stdio servers exit)."""
        self.clients.close()


def attach_mcp(
    servers: Mapping[str, McpServer],
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    start_timeout_s: float,
    call_timeout_s: float,
    search: McpToolSearch = "engine",
) -> McpAttachment:
    """Start ``servers`` and make their tools: listed one by one when their definitions
    take at most ``budget_tokens`` (by ``count_tokens``), else deferred behind the pair
    (``search="engine"``) or by the provider (``"anthropic"``)."""
    clients = McpClients.start(servers, start_timeout_s, call_timeout_s)
    try:
        tools = [McpTool.for_tool(source, clients) for source in clients.tools()]
        _check_distinct(tools)
    except BaseException:
        clients.close()
        raise
    catalog = ToolCatalog(tools)
    if definitions_tokens(tools, count_tokens) <= budget_tokens:
        return McpAttachment(clients, tuple(tools), catalog, deferred=False)
    if search == "anthropic":
        names = frozenset(tool.name for tool in tools)
        return McpAttachment(clients, tuple(tools), catalog, True, provider_deferred=names)
    pair: tuple[Tool[Any], ...] = (ToolSearch.offering(catalog, list(servers)), ToolCall(catalog))
    return McpAttachment(clients, pair, catalog, deferred=True)


def definitions_tokens(tools: list[McpTool], count_tokens: Callable[[str], int]) -> int:
    """Tokens the tools' definitions take in a request (their canonical JSON)."""
    return sum(
        count_tokens(
            canonical_json(
                {"name": t.name, "description": t.description, "parameters": t.parameters}
            )
        )
        for t in tools
    )


def _check_distinct(tools: list[McpTool]) -> None:
    seen: dict[str, McpTool] = {}
    for tool in tools:
        other = seen.setdefault(tool.name, tool)
        if other is not tool:
            raise McpStartError(
                f"MCP tools {other.source.name!r} and {tool.source.name!r} of server "
                f"{tool.source.server!r} both become {tool.name!r}"
            )
