"""Tool definitions as the model sees them: name, description, JSON-schema parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextengine.canonical import canonical_copy
from contextengine.errors import ConfigError
from contextengine.types import ToolDefinition


@dataclass(frozen=True)
class ToolSpec:
    """A tool's definition. Two specs with equal fields render to identical bytes."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @classmethod
    def coerce(cls, tool: ToolSpec | Mapping[str, Any]) -> ToolSpec:
        """Accept a ``ToolSpec``, a flat ``{name, description, parameters}`` dict, or the
        OpenAI ``{"type": "function", "function": {...}}`` form."""
        if isinstance(tool, ToolSpec):
            return tool
        body = tool.get("function", tool) if tool.get("type") == "function" else tool
        try:
            return cls(
                name=str(body["name"]),
                description=str(body.get("description", "")),
                parameters=dict(body.get("parameters") or {"type": "object", "properties": {}}),
            )
        except KeyError:
            raise ConfigError(f"tool definition without a name: {dict(tool)!r:.200}") from None

    def to_openai(self) -> ToolDefinition:
        """The OpenAI function-tool form, keys in canonical order."""
        definition: ToolDefinition = {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }
        return canonical_copy(definition)
