import json
from typing import ClassVar

import pytest
from pydantic import BaseModel

from contextengine.canonical import canonical_json
from contextengine.errors import ConfigError
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.mask import ToolMask
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import Toolset, declared_defaults, default_toolset
from contextengine.types import ToolCall

BUILTINS = (
    "file_delete",
    "file_edit",
    "file_glob",
    "file_grep",
    "file_ls",
    "file_read",
    "file_write",
    "shell_exec",
    "todo_write",
    "web_fetch",
)


class Boom:
    name: ClassVar[str] = "boom"
    description: ClassVar[str] = "Always fails."

    class Args(BaseModel):
        pass

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutcome:
        raise KeyError("missing piece")


def test_a_tool_is_a_default_by_declaring_it_in_its_own_module(tmp_path, monkeypatch) -> None:
    package = tmp_path / "more_tools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    tool = "class {name}:\n    name = '{tool}'\n{default}"
    (package / "alpha.py").write_text(tool.format(name="Alpha", tool="alpha", default=""))
    (package / "beta.py").write_text(
        tool.format(name="Beta", tool="beta", default="    default = True\n")
        + "class Helper:\n    default = 'yes'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert [cls.__name__ for cls in declared_defaults("more_tools")] == ["Beta"]


def test_default_toolset_names_and_specs() -> None:
    toolset = default_toolset()
    assert toolset.names == BUILTINS
    specs = toolset.specs()
    assert [s.name for s in specs] == list(BUILTINS)
    required = {s.name: s.parameters.get("required", []) for s in specs}
    assert required == {
        "file_delete": ["path"],
        "file_edit": ["path"],
        "file_glob": ["pattern"],
        "file_grep": ["pattern"],
        "file_ls": [],
        "file_read": ["path"],
        "file_write": ["path", "content"],
        "shell_exec": ["command"],
        "todo_write": ["todos"],
        "web_fetch": ["url"],
    }


def test_specs_are_tidy_and_deterministic() -> None:
    first = canonical_json([s.to_openai() for s in default_toolset().specs()])
    second = canonical_json([s.to_openai() for s in default_toolset().specs()])
    assert first == second
    for marker in ('"title"', "$ref", "$defs", '"anyOf"', '"default"', "additionalProperties"):
        assert marker not in first
    specs = {s.name: s.parameters for s in default_toolset().specs()}
    assert specs["file_read"]["properties"]["start_line"] == {"type": "integer"}
    status = specs["todo_write"]["properties"]["todos"]["items"]["properties"]["status"]
    assert status["enum"] == ["pending", "in_progress", "done", "failed"]
    edit_item = specs["file_edit"]["properties"]["edits"]["items"]
    assert edit_item["required"] == ["old_text", "new_text"]
    assert len(first) < 400 * len(specs), "tool definitions are paid on every request"


def test_the_lean_schema_still_validates_in_full(ctx: ToolContext) -> None:
    outcome = default_toolset().execute(
        _call("file_read", '{"path": "a.txt", "start_line": 0}'), ctx
    )
    assert outcome.status == "error" and outcome.error is not None
    assert outcome.error.code == "invalid_arguments"


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="duplicate tool name 'boom'"):
        Toolset([Boom(), Boom()])


def _call(name: str, arguments: str = "{}") -> ToolCall:
    return ToolCall("c1", name, arguments)


def test_unknown_tool_names_the_available_ones(ctx: ToolContext) -> None:
    out = default_toolset().execute(_call("rm_rf"), ctx)
    assert out.error.code == "unknown_tool"
    assert out.error.message == f"unknown tool 'rm_rf'; available tools: {', '.join(BUILTINS)}"


def test_masked_tool_is_never_run(ctx: ToolContext) -> None:
    mask = ToolMask.only("file_read", "todo_")
    call = _call("file_write", json.dumps({"path": "x.txt", "content": "no"}))
    out = default_toolset().execute(call, ctx, mask)
    assert out.error.code == "masked_tool"
    assert "allowed tools: file_read, todo_write" in out.error.message
    assert not (ctx.workspace.root / "x.txt").exists()
    allowed = default_toolset().execute(_call("todo_write", '{"todos": []}'), ctx, mask)
    assert allowed.status == "success"


def test_mask_allowing_nothing(ctx: ToolContext) -> None:
    out = default_toolset().execute(_call("file_ls"), ctx, ToolMask(allow=()))
    assert out.error.message.endswith("allowed tools: (none)")


@pytest.mark.parametrize("raw", ["[1, 2]", "{not json", '"text"'])
def test_arguments_that_are_not_an_object(ctx: ToolContext, raw: str) -> None:
    out = default_toolset().execute(_call("file_ls", raw), ctx)
    assert out.error.code == "invalid_arguments"
    assert "not a JSON object" in out.error.message


def test_validation_errors_carry_pydantic_messages(ctx: ToolContext) -> None:
    out = default_toolset().execute(_call("file_read", '{"path": 3, "start_line": 0}'), ctx)
    assert out.error.code == "invalid_arguments"
    assert out.error.message == (
        "invalid arguments for file_read: path: Input should be a valid string; "
        "start_line: Input should be greater than or equal to 1"
    )
    extra = default_toolset().execute(_call("file_ls", '{"dir": "x"}'), ctx)
    assert (
        extra.error.message == "invalid arguments for file_ls: dir: Extra inputs are not permitted"
    )


def test_exception_inside_a_tool_keeps_the_traceback(ctx: ToolContext) -> None:
    out = Toolset([Boom()]).execute(_call("boom"), ctx)
    assert out.status == "error"
    assert out.error.code == "exception"
    message = out.error.message
    assert message.startswith("tool boom raised an exception:\nTraceback (most recent call last):")
    assert 'raise KeyError("missing piece")' in message
    assert message.rstrip().endswith("KeyError: 'missing piece'")
