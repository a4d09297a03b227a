"""Outside JSON and text: strict parsing that only raises ValueError, and encodable strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine.canonical import canonical_json
from contextengine.untrusted import MAX_JSON_DEPTH, parse_json, parse_json_prefix, valid_text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("NaN", "NaN is not valid JSON"),
        ('{"a": Infinity}', "Infinity is not valid JSON"),
        ("[-Infinity]", "-Infinity is not valid JSON"),
        ("1e999", "out of range"),
        ("[" * 100_000, f"nested deeper than {MAX_JSON_DEPTH}"),
        ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "nested deeper"),
        ('{"a": 1} {"b": 2}', "extra data"),
        ("", "Expecting value"),
    ],
)
def test_what_json_loads_lets_through_or_crashes_on_is_a_value_error(
    text: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_json(text)


def test_json_at_the_depth_limit_parses() -> None:
    depth = MAX_JSON_DEPTH
    assert parse_json("[" * depth + "]" * depth) is not None


def test_surrogate_escapes_become_replacement_characters_and_pairs_their_character() -> None:
    assert parse_json(' {"\\udfff": ["\\ud800x", "\\ud83d\\ude00"]} ') == {
        "\ufffd": ["\ufffdx", "😀"]
    }
    assert parse_json_prefix('{"a": "\\ud800"} and more') == ({"a": "\ufffd"}, 15)


@given(st.text(alphabet=st.characters(codec=None, categories=None)))
def test_valid_text_always_encodes_and_keeps_valid_text(text: str) -> None:
    cleaned = valid_text(text)
    cleaned.encode("utf-8")
    assert len(cleaned) <= len(text)
    if not any("\ud800" <= c <= "\udfff" for c in text):
        assert cleaned == text


@given(
    st.recursive(
        st.text() | st.integers() | st.floats(allow_nan=True),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=10,
    )
)
def test_parse_json_raises_only_value_error_on_anything_json_dumps_writes(value: object) -> None:
    text = json.dumps(value)
    try:
        parsed = parse_json(text)
    except ValueError:
        return
    canonical_json(parsed).encode("utf-8")


def test_canonical_json_writes_lone_surrogates_as_replacement_characters() -> None:
    assert canonical_json({"k\ud800": "v\udfff"}) == '{"k\ufffd":"v\ufffd"}'


def test_canonical_json_of_a_too_deep_value_is_a_value_error() -> None:
    value: list[object] = []
    for _ in range(5000):
        value = [value]
    with pytest.raises(ValueError, match="nested too deeply"):
        canonical_json(value)
