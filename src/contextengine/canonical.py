"""Canonical JSON: the one structure->text step used everywhere (R1.3).

Sorted keys, fixed compact separators, non-ASCII kept. The output depends only on the
value, never on dict insertion order or ``PYTHONHASHSEED``. Lone surrogates in strings become
U+FFFD, so every output encodes as UTF-8; values with no JSON form raise ``ValueError``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Mapping, Set
from typing import Any, TypeVar, cast, overload

from pydantic import BaseModel

from contextengine.untrusted import JSONValue, valid_text


@overload
def canonical_obj(obj: Mapping[str, Any]) -> dict[str, JSONValue]: ...
@overload
def canonical_obj(obj: Any) -> JSONValue: ...
def canonical_obj(obj: Any) -> JSONValue:
    """Return ``obj`` as plain JSON data whose dicts are built in sorted-key order.

    Any JSON encoder then produces canonical bytes, which matters for SDKs that
    serialize request bodies themselves with insertion order.
    """
    if obj is None or isinstance(obj, bool):
        return obj
    if isinstance(obj, str):
        return valid_text(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"canonical_json: {obj!r} has no JSON form")
        return obj
    if isinstance(obj, enum.Enum):
        return canonical_obj(obj.value)
    if isinstance(obj, BaseModel):
        return canonical_obj(obj.model_dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return canonical_obj({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, Mapping):
        items: dict[str, JSONValue] = {}
        for key, value in obj.items():
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise TypeError(f"canonical_json: dict key {key!r} is not a JSON scalar")
            text_key = valid_text(key) if isinstance(key, str) else json.dumps(key)
            if text_key in items:
                raise ValueError(f"canonical_json: two keys map to {text_key!r}")
            items[text_key] = canonical_obj(value)
        return {k: items[k] for k in sorted(items)}
    if isinstance(obj, list | tuple):
        return [canonical_obj(v) for v in obj]
    if isinstance(obj, Set):
        members = [canonical_obj(v) for v in obj]
        return sorted(members, key=canonical_json)
    raise TypeError(f"canonical_json: cannot serialize {type(obj).__name__}")


JSONMapping = TypeVar("JSONMapping", bound=Mapping[str, object])


def canonical_copy(obj: JSONMapping) -> JSONMapping:
    """``canonical_obj`` of a JSON mapping whose type is known (a message, a tool): the same
    keys and values, rebuilt in sorted-key order, so it keeps its type."""
    return cast(JSONMapping, canonical_obj(obj))


def canonical_json(obj: Any) -> str:
    """Serialize ``obj`` deterministically: sorted keys, ``(",", ":")``, non-ASCII kept."""
    try:
        return json.dumps(
            canonical_obj(obj),
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=True,
            allow_nan=False,
        )
    except RecursionError:
        raise ValueError("canonical_json: value nested too deeply") from None
