import pytest

from contextengine.types import ToolCall


@pytest.mark.parametrize(
    ("arguments_json", "parsed"),
    [('{"path": "a.py"}', {"path": "a.py"}), ("", {}), ("[1, 2]", {}), ("{broken", {})],
)
def test_arguments_or_empty_never_raises(arguments_json: str, parsed: dict) -> None:
    call = ToolCall(id="c1", name="file_read", arguments_json=arguments_json)
    assert call.arguments_or_empty() == parsed


def test_arguments_raises_on_what_is_not_an_object() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall(id="c1", name="file_read", arguments_json="[1]").arguments()
