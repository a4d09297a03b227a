"""An MCP server's tool as a tool of the toolset: ``mcp__<server>__<tool>`` (R18.1).

Its definition is the server's input schema in canonical form (R1.3), listed once at
session start and never changed (R2.1). Its annotations set its traits: ``readOnlyHint``
makes it a read (the 2-action rule counts it), ``openWorldHint`` a web tool,
``destructiveHint`` a high-risk one (R8.2). A call is validated against the schema
(``jsonschema``) before it is sent; the result becomes an outcome like any built-in
tool's (text, images and audio as placeholders with their size, embedded resources with
their URI), so externalization, compression, deltas and pruning treat it the same way,
and a result the server marks ``isError`` is an error kept verbatim (R5).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from jsonschema import Draft202012Validator, SchemaError
from jsonschema.exceptions import best_match
from pydantic import BaseModel, ConfigDict

from contextengine.canonical import canonical_json, canonical_obj
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.traits import ToolCategory, ToolTraits
from contextengine.tools.context import ToolContext

if TYPE_CHECKING:
    from mcp import types

    from contextengine.tools.mcp.clients import McpClients, ServerTool

PREFIX = "mcp__"
NAME_CHARS = 64  # the longest tool name OpenAI and Anthropic accept
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``: characters providers refuse become ``_``; a name over
    ``NAME_CHARS`` is cut and ends with a hash of the whole, so names stay distinct."""
    name = f"{PREFIX}{server}__{_NOT_NAME.sub('_', tool)}"
    if len(name) <= NAME_CHARS:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: NAME_CHARS - 9]}_{digest}"


class AnyArguments(BaseModel):
    """Any JSON object: an MCP tool's arguments are checked against its own schema."""

    model_config = ConfigDict(extra="allow")


class McpTool:
    """A tool of an MCP server; ``for_tool`` makes one class per server tool."""

    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[Mapping[str, Any]]
    traits: ClassVar[ToolTraits]
    Args = AnyArguments
    source: ClassVar[ServerTool]

    def __init__(self, clients: McpClients) -> None:
        self._clients = clients
        self._validator = _validator(self.parameters)

    @classmethod
    def for_tool(cls, source: ServerTool, clients: McpClients) -> McpTool:
        """The tool offering ``source`` (a tool its server listed) through ``clients``."""
        attributes = {
            "name": tool_name(source.server, source.name),
            "description": source.description,
            "parameters": lean_schema(source.input_schema),
            "traits": traits_of_hints(source.read_only, source.destructive, source.open_world),
            "source": source,
        }
        subclass = type(f"McpTool[{attributes['name']}]", (cls,), attributes)
        tool: McpTool = subclass(clients)
        return tool

    def run(self, args: AnyArguments, ctx: ToolContext) -> ToolOutcome:
        """Validate the arguments against the tool's schema and call it on its server."""
        return self.call(dict(args.model_extra or {}))

    def call(self, arguments: Mapping[str, Any]) -> ToolOutcome:
        """The outcome of calling the tool with ``arguments`` (checked here first)."""
        from contextengine.tools.mcp.clients import McpCallError

        problem = schema_problem(self._validator, arguments)
        if problem is not None:
            return ToolOutcome.fail(
                "invalid_arguments", f"invalid arguments for {self.name}: {problem}"
            )
        server, tool = self.source.server, self.source.name
        if not self._clients.offers(server, tool):
            return ToolOutcome.fail(
                "masked_tool",
                f"tool {self.name!r} was withdrawn by MCP server {server!r} and was not run; "
                f"that server still offers: {', '.join(self._clients.offered(server)) or '(none)'}",
            )
        try:
            result = self._clients.call(server, tool, arguments)
        except McpCallError as exc:
            return ToolOutcome.fail(exc.code, str(exc))
        return outcome_of(result)


def traits_of_hints(read_only: bool, destructive: bool, open_world: bool) -> ToolTraits:
    """A tool's traits from its MCP annotations (only hints a server set to true count)."""
    category: ToolCategory = "read" if read_only else "web" if open_world else "other"
    return ToolTraits(category=category, risk="high" if destructive else "low")


def lean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The input schema as the model sees it: canonical, without the ``title`` of each
    schema node (SDKs generate them from the names; validation ignores them)."""
    cleaned = _without_titles(dict(schema))
    cleaned.setdefault("type", "object")
    return canonical_obj(cleaned)


def _without_titles(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: _without_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _without_titles(value)
    return out


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator | None:
    """A validator of ``schema``; ``None`` when the server's schema is itself invalid
    (the server then judges the arguments)."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None
    return Draft202012Validator(schema)


def schema_problem(validator: Draft202012Validator | None, arguments: Any) -> str | None:
    """What is wrong with ``arguments`` by the schema (where and what), or ``None``."""
    if validator is None:
        return None
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def outcome_of(result: types.CallToolResult) -> ToolOutcome:
    """A tool result as an outcome: its content as text, an ``isError`` result a failure
    whose message is the server's text, verbatim."""
    text = "\n".join(_block_text(block) for block in result.content)
    if not result.content and result.structured_content is not None:
        text = canonical_json(result.structured_content)
    if result.is_error:
        return ToolOutcome.fail("tool_failed", text or "the tool reported an error without text")
    return ToolOutcome.ok(text)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {_decoded_size(block.data):,} bytes]"
    if kind == "resource":
        resource = block.resource
        if hasattr(resource, "text"):
            return f"[resource {resource.uri}]\n{resource.text}"
        mime = resource.mime_type or "binary"
        return f"[resource {resource.uri}: {mime}, {_decoded_size(resource.blob):,} bytes]"
    if kind == "resource_link":
        return f"[resource link {block.uri} {block.name}]"
    return canonical_json(block.model_dump(mode="json", by_alias=True, exclude_none=True))


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
