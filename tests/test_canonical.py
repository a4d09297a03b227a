import dataclasses
import json
import os
import subprocess
import sys
from enum import Enum

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from contextengine import canonical_json

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def test_sorted_keys_fixed_separators_non_ascii_kept():
    assert (
        canonical_json({"b": 1, "a": [1, 2], "c": "héllo 你好"})
        == '{"a":[1,2],"b":1,"c":"héllo 你好"}'
    )


def test_nested_structures_tuples_models_dataclasses_enums():
    class Color(Enum):
        RED = "red"

    @dataclasses.dataclass
    class Point:
        y: int
        x: int

    class Model(BaseModel):
        z: int
        a: tuple[int, ...]

    value = {
        "p": Point(y=2, x=1),
        "m": Model(z=3, a=(1, 2)),
        "c": Color.RED,
        "t": (1, {"b": 2, "a": 1}),
    }
    assert canonical_json(value) == (
        '{"c":"red","m":{"a":[1,2],"z":3},"p":{"x":1,"y":2},"t":[1,{"a":1,"b":2}]}'
    )


def test_rejects_values_without_json_form():
    with pytest.raises(ValueError):
        canonical_json(float("nan"))
    with pytest.raises(TypeError):
        canonical_json(object())


def test_sets_are_ordered():
    assert canonical_json({3, 1, 2}) == "[1,2,3]"


@given(json_values)
def test_roundtrip_and_insertion_order_independence(value):
    text = canonical_json(value)
    assert json.loads(text) == value

    def reverse(v):
        if isinstance(v, dict):
            return {k: reverse(v[k]) for k in reversed(list(v))}
        if isinstance(v, list):
            return [reverse(x) for x in v]
        return v

    assert canonical_json(reverse(value)) == text


def test_identical_bytes_across_processes_and_hash_seeds():
    code = (
        "from contextengine import canonical_json\n"
        "d = {}\n"
        "for w in ['zeta','alpha','mu','beta','omega','kappa']: d[w] = {w[::-1]: [w, len(w)], 'set': {w, w+'x'}}\n"
        "print(canonical_json({'tools': d, 'frozen': frozenset(d)}))\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1
