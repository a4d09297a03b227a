import pytest

from contextengine.types import ToolCall, Usage


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


def test_usage_from_wire_reads_each_provider_form_as_one_shape() -> None:
    chat = {
        "prompt_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 60},
        "completion_tokens": 7,
    }
    responses = {
        "input_tokens": 100,
        "input_tokens_details": {"cached_tokens": 60},
        "output_tokens": 7,
    }
    anthropic = {
        "input_tokens": 10,
        "cache_read_input_tokens": 60,
        "cache_creation_input_tokens": 30,
        "output_tokens": 7,
    }
    assert Usage.from_wire(chat) == Usage(100, 60, 0, 7)
    assert Usage.from_wire(responses) == Usage(100, 60, 0, 7)
    assert Usage.from_wire(anthropic, 1.5, "m") == Usage(100, 60, 30, 7, 1.5, "m")
    assert Usage.from_wire(
        {"input_tokens": 5, "cached_tokens": True, "output_tokens": -3}
    ) == Usage(5)
    assert Usage.from_wire({"output_tokens": 7}) is None
    assert Usage.from_wire("100") is None
    assert Usage(100, 60, 30, 7, 1.5, "m").token_counts() == {
        "input_tokens": 100,
        "cached_tokens": 60,
        "cache_write_tokens": 30,
        "output_tokens": 7,
    }
