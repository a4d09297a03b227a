"""The toolset: tool definitions for the model and the guarded way to run a call (R2.4).

A call to an unknown or masked tool is never executed; the model gets an error
observation naming the tools it may call instead. Bad arguments and exceptions inside a
tool become error observations too, so nothing a model does can crash the loop.
"""

from __future__ import annotations

import importlib
import pkgutil
import traceback
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, ValidationError

from contextengine.errors import ConfigError
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.mask import ToolMask
from contextengine.toolkit.spec import ToolSpec
from contextengine.toolkit.traits import ToolTraits, traits_of
from contextengine.tools.context import ToolContext
from contextengine.tools.tool import Tool
from contextengine.types import ToolCall


class Toolset:
    """A fixed set of tools with unique names (the session's tool list, R2.1)."""

    def __init__(self, tools: Sequence[Tool[Any]]) -> None:
        self._tools: dict[str, Tool[Any]] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise ConfigError(f"duplicate tool name {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names, sorted."""
        return tuple(sorted(self._tools))

    def plus(self, *tools: Tool[Any]) -> Toolset:
        """This set with ``tools`` added (a name already here is an error)."""
        return Toolset([*self._tools.values(), *tools])

    def get(self, name: str) -> Tool[Any] | None:
        """The tool called ``name``, if any."""
        return self._tools.get(name)

    def traits(self, name: str) -> ToolTraits:
        """What the tool called ``name`` declares about itself (``UNDECLARED`` if unknown)."""
        return traits_of(self._tools.get(name))

    def call_traits(self, call: ToolCall) -> ToolTraits:
        """What one call declares: a tool that runs other tools (``tool_call``) answers
        ``traits_of_call(arguments)`` with the called tool's traits; else ``traits``."""
        resolve = getattr(self._tools.get(call.name), "traits_of_call", None)
        if callable(resolve):
            declared = resolve(call.arguments_or_empty())
            if isinstance(declared, ToolTraits):
                return declared
        return self.traits(call.name)

    def specs(self) -> list[ToolSpec]:
        """The definitions the model sees, sorted by name; same bytes on every call."""
        return [
            ToolSpec(name, self._tools[name].description, parameters_of(self._tools[name]))
            for name in self.names
        ]

    def execute(
        self, call: ToolCall, ctx: ToolContext, mask: ToolMask | None = None
    ) -> ToolOutcome:
        """Run ``call`` if the tool exists and the mask allows it; any failure is an outcome."""
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolOutcome.fail(
                "unknown_tool",
                f"unknown tool {call.name!r}; available tools: {', '.join(self.names)}",
            )
        if mask is not None and not mask.allows(call.name):
            allowed = ", ".join(mask.allowed_names(self.names)) or "(none)"
            return ToolOutcome.fail(
                "masked_tool",
                f"tool {call.name!r} is not allowed now and was not run; allowed tools: {allowed}",
            )
        try:
            raw = call.arguments()
        except ValueError as exc:
            return ToolOutcome.fail(
                "invalid_arguments",
                f"arguments of {call.name} are not a JSON object ({exc}): {call.arguments_json!r:.300}",
            )
        try:
            args = tool.Args.model_validate(raw)
        except ValidationError as exc:
            return ToolOutcome.fail(
                "invalid_arguments", f"invalid arguments for {call.name}: {_explain(exc)}"
            )
        try:
            return tool.run(args, ctx)
        except Exception:
            return ToolOutcome.fail(
                "exception", f"tool {call.name} raised an exception:\n{traceback.format_exc()}"
            )


def _explain(exc: ValidationError) -> str:
    """Pydantic's messages, one per problem, without its documentation links."""
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        problems.append(f"{where}: {err['msg']}" if where else err["msg"])
    return "; ".join(problems)


def parameters_of(tool: Tool[Any]) -> Mapping[str, Any]:
    """A tool's parameter schema: the JSON schema it declares as ``parameters`` (an MCP
    tool's, which checks its own arguments), else its argument model's (``args_schema``)."""
    declared = getattr(tool, "parameters", None)
    return declared if isinstance(declared, Mapping) else args_schema(tool.Args)


# Tool definitions are paid on every request: the model is shown what it needs to call a
# tool right, and the argument model still validates every call in full.
_VALIDATION_ONLY = frozenset(
    {"title", "default", "additionalProperties", "minLength", "minimum", "minItems"}
)


def args_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of an argument model, lean for the model's eyes: no titles, defaults
    or validation-only bounds (the argument model checks those), nested models inlined
    without their own descriptions, ``X | None`` shown as ``X``, an enum's description
    left out where it only lists the values."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})
    schema.pop("description", None)  # the model's docstring: the tool's description says it
    return _tidy(schema, defs)


def _tidy(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return _tidy({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs)
    options = node.get("anyOf")
    if options and len(options) == 2 and {"type": "null"} in options:
        (kept,) = [o for o in options if o != {"type": "null"}]
        return _tidy({**{k: v for k, v in node.items() if k != "anyOf"}, **kept}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _VALIDATION_ONLY or (key == "description" and _says_nothing(node)):
            continue
        if key == "properties":
            out[key] = {name: _tidy(sub, defs) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = {k: v for k, v in _tidy(value, defs).items() if k != "description"}
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [_tidy(sub, defs) for sub in value]
        else:
            out[key] = value
    return out


def _says_nothing(node: dict[str, Any]) -> bool:
    """An enum's description that only lists its values."""
    values = node.get("enum") or []
    text = str(node.get("description", "")).lower()
    return bool(values) and all(str(v).lower() in text for v in values) and len(text) < 60


def default_toolset() -> Toolset:
    """The built-in tools: every tool class of this package that declares ``default =
    True`` (file read/write/edit/delete/ls/glob/grep, shell_exec, todo_write and web_fetch).
    A tool joins every request's tool list, so it opts in where it is
    written: adding one touches its own module."""
    return Toolset([tool() for tool in declared_defaults(__package__ or "contextengine.tools")])


@cache
def declared_defaults(package_name: str) -> tuple[type[Any], ...]:
    """The classes defined in ``package_name``'s modules that declare ``default = True``
    (modules by name, classes in the order their module defines them)."""
    package = importlib.import_module(package_name)
    found: list[type[Any]] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += [
            value
            for value in vars(module).values()
            if isinstance(value, type)
            and value.__module__ == module.__name__
            and vars(value).get("default") is True
        ]
    return tuple(found)
