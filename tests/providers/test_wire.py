"""Mask resolution and argument normalization shared by all adapters."""

from __future__ import annotations

import pytest

from contextengine import ConfigError, MissingAPIKeyError, ProviderError, ToolMask
from contextengine.providers.wire import (
    ToolChoice,
    arguments_object,
    canonical_arguments,
    check_params,
    require_api_key,
    resolve_tool_choice,
)

from .conftest import BuildRequest


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        (None, ToolChoice("auto")),
        (ToolMask(), ToolChoice("auto")),
        (ToolMask(mode="required"), ToolChoice("required")),
        (ToolMask.only("file_read"), ToolChoice("required", ("file_read",))),
        (ToolMask.only("file_"), ToolChoice("required", ("file_read", "file_write"))),
        (ToolMask.only("file_", mode="auto"), ToolChoice("auto", ("file_read", "file_write"))),
        (ToolMask.only("file_", "shell_", "todo_"), ToolChoice("required")),
        (ToolMask(allow=(), mode="auto"), ToolChoice("none")),
    ],
)
def test_masks_resolve_to_one_neutral_choice(
    build_request: BuildRequest, mask: ToolMask | None, expected: ToolChoice
) -> None:
    assert resolve_tool_choice(build_request(mask)) == expected


def test_a_required_call_with_nothing_allowed_is_an_error(build_request: BuildRequest) -> None:
    with pytest.raises(ProviderError, match="requires a tool call but allows none"):
        resolve_tool_choice(build_request(ToolMask.only("web_")))


def test_single_names_the_only_allowed_tool() -> None:
    assert ToolChoice("required", ("file_read",)).single == "file_read"
    assert ToolChoice("required", ("file_read", "file_write")).single is None
    assert ToolChoice("required").single is None


def test_arguments_are_canonical_when_they_parse_and_raw_otherwise() -> None:
    assert canonical_arguments('{"b": 1, "a": "ü"}') == '{"a":"ü","b":1}'
    assert canonical_arguments('{"path": "a.py"') == '{"path": "a.py"'
    assert canonical_arguments("") == ""


def test_arguments_object_keeps_broken_arguments_visible() -> None:
    assert arguments_object('{"path":"a"}') == {"path": "a"}
    assert arguments_object("  ") == {}
    assert arguments_object("{bad") == {"invalid_arguments": "{bad"}
    assert arguments_object("[1]") == {"invalid_arguments": "[1]"}


def test_api_key_comes_from_argument_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_KEY", "from-env")
    assert require_api_key("explicit", "SOME_KEY", "p") == "explicit"
    assert require_api_key(None, "SOME_KEY", "p") == "from-env"
    monkeypatch.delenv("SOME_KEY")
    with pytest.raises(MissingAPIKeyError, match="set the SOME_KEY environment variable"):
        require_api_key(None, "SOME_KEY", "p")


def test_params_may_not_override_adapter_fields() -> None:
    check_params({"temperature": 0}, frozenset({"tools"}), "X")
    with pytest.raises(ConfigError, match=r"\['tools'\] are set by the adapter"):
        check_params({"tools": []}, frozenset({"tools"}), "X")
