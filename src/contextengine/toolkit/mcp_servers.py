"""MCP server settings in the ecosystem's shape: the ``mcpServers`` mapping of Claude
Desktop's config and Claude Code's ``.mcp.json``, so a user's existing file works as is.

A stdio server is ``{"command", "args"?, "env"?, "cwd"?}`` (``"type": "stdio"`` optional);
a streamable-HTTP server is ``{"type": "http", "url", "headers"?}`` (a ``url`` without a
``type`` is one too, as Cursor writes it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from contextengine.errors import ConfigError

PROJECT_FILE = ".mcp.json"
"""The file at a workspace's root whose ``mcpServers`` a session starts by default."""

SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""What a server name may be: it is part of every tool name (``mcp__<server>__<tool>``),
which providers allow only letters, digits, ``_`` and ``-`` in, 64 at most."""


McpToolSearch = Literal["engine", "anthropic"]
"""Who finds deferred MCP tools: the engine (``tool_search``/``tool_call``) or Anthropic's API
(``defer_loading`` with its search tool)."""


class StdioServer(BaseModel):
    """A server the session starts as a subprocess and talks to over stdin/stdout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class HttpServer(BaseModel):
    """A running server the session reaches over streamable HTTP."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["http", "streamable-http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)


McpServer = StdioServer | HttpServer
"""One entry of ``mcpServers``."""

_ENTRY: TypeAdapter[McpServer] = TypeAdapter(
    Annotated[StdioServer | HttpServer, Field(discriminator="type")]
)


def server_entry(name: str, value: Any, source: str = "mcpServers") -> McpServer:
    """One ``mcpServers`` entry as settings; a bad one is a ``ConfigError`` naming it."""
    if not SERVER_NAME.match(name):
        raise ConfigError(
            f"{source}: MCP server name {name!r} must be 1-40 letters, digits, '_' or '-'"
        )
    if isinstance(value, StdioServer | HttpServer):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: MCP server {name!r} must be an object")
    entry = dict(value)
    if "type" not in entry:
        entry["type"] = "http" if "url" in entry else "stdio"
    if entry["type"] == "sse":
        raise ConfigError(
            f"{source}: MCP server {name!r}: the SSE transport is not supported; "
            "use its streamable-HTTP endpoint with type 'http'"
        )
    try:
        return _ENTRY.validate_python(entry)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"][1:]) or str(err["loc"][0])
        raise ConfigError(f"{source}: MCP server {name!r}: {where}: {err['msg']}") from None


def server_entries(value: Any, source: str = "mcpServers") -> dict[str, McpServer]:
    """An ``mcpServers`` mapping as settings, by server name."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: mcpServers must be a (JSON) object of servers by name")
    return {str(name): server_entry(str(name), entry, source) for name, entry in value.items()}


def read_mcp_file(path: Path) -> dict[str, McpServer]:
    """The servers of a JSON file ``{"mcpServers": {...}}`` (``.mcp.json``'s shape)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"MCP config {path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"MCP config {path}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"MCP config {path}: not valid JSON ({exc.msg}, line {exc.lineno})"
        ) from None
    if not isinstance(data, dict) or "mcpServers" not in data:
        raise ConfigError(f'MCP config {path}: expected an object with "mcpServers"')
    return server_entries(data["mcpServers"], f"MCP config {path}")


def session_servers(
    configured: Mapping[str, McpServer], workspace: Path, read_project_file: bool
) -> dict[str, McpServer]:
    """The servers a session in ``workspace`` starts: the workspace's ``.mcp.json`` (when
    ``read_project_file`` and it exists), then the configured ones (which win a name)."""
    found: dict[str, McpServer] = {}
    project = workspace / PROJECT_FILE
    if read_project_file and project.is_file():
        found.update(read_mcp_file(project))
    found.update(configured)
    return dict(sorted(found.items()))
