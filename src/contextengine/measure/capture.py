"""Capture files: one captured request a line, with the usage the provider reported.

A line is either a bare request body or ``{"request": BODY, "response"?: ..., "usage"?:
...}`` (what ``contextengine proxy`` writes). Usage may be in any provider's form (Chat
Completions, Responses, Anthropic Messages) or already normalized; ``Usage.from_wire``
turns each into one shape where ``input_tokens`` is the whole prompt, cached part included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextengine.measure.segments import CaptureFormatError
from contextengine.types import Usage
from contextengine.untrusted import parse_json


@dataclass(frozen=True)
class CapturedRequest:
    """One captured request body and, when known, its usage."""

    body: Mapping[str, Any]
    usage: Usage | None = None


def load_capture(path: Path) -> list[CapturedRequest]:
    """Read a capture file; a bad line is one error naming the file and the line."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        raise CaptureFormatError(f"{path}: no such capture file") from None
    captured = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            captured.append(captured_request(parse_json(line)))
        except (ValueError, CaptureFormatError) as exc:
            raise CaptureFormatError(f"{path}:{number}: {exc}") from None
    return captured


def captured_request(value: Any) -> CapturedRequest:
    """A capture line's value: a bare body or a ``{"request": ...}`` wrapper."""
    if not isinstance(value, Mapping):
        raise CaptureFormatError("a capture line must be a JSON object")
    if "request" not in value:
        return CapturedRequest(value)
    body = value["request"]
    if not isinstance(body, Mapping):
        raise CaptureFormatError("'request' must be a JSON object")
    usage = value.get("usage")
    response = value.get("response")
    if usage is None and isinstance(response, Mapping):
        usage = response.get("usage")
    return CapturedRequest(body, Usage.from_wire(usage))
