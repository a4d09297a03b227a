"""Capture files: one captured request a line, with the usage the provider reported.

A line is either a bare request body or ``{"request": BODY, "response"?: ..., "usage"?:
...}`` (what ``contextengine proxy`` writes). Usage may be in any provider's form (Chat
Completions, Responses, Anthropic Messages) or already normalized; ``normalize_usage``
turns each into one shape where ``input_tokens`` is the whole prompt, cached part included.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextengine.measure.segments import CaptureFormatError
from contextengine.untrusted import parse_json


@dataclass(frozen=True)
class CapturedUsage:
    """Token usage of one call: the whole prompt, its cached and cache-written parts, output."""

    input_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        """A JSON-ready form."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class CapturedRequest:
    """One captured request body and, when known, its usage."""

    body: Mapping[str, Any]
    usage: CapturedUsage | None = None


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
    return CapturedRequest(body, normalize_usage(usage))


def normalize_usage(usage: Any) -> CapturedUsage | None:
    """Usage in any provider's form (or already normalized) as ``CapturedUsage``."""
    if not isinstance(usage, Mapping):
        return None
    if "prompt_tokens" in usage:  # Chat Completions
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
        return CapturedUsage(
            _count(usage.get("prompt_tokens")), cached, 0, _count(usage.get("completion_tokens"))
        )
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
        read = _count(usage.get("cache_read_input_tokens"))
        written = _count(usage.get("cache_creation_input_tokens"))
        total = _count(usage.get("input_tokens")) + read + written  # Anthropic: input excludes
        return CapturedUsage(total, read, written, _count(usage.get("output_tokens")))
    details = usage.get("input_tokens_details")
    cached = (
        _count(details.get("cached_tokens"))
        if isinstance(details, Mapping)
        else _count(usage.get("cached_tokens"))
    )
    if "input_tokens" not in usage:
        return None
    return CapturedUsage(
        _count(usage.get("input_tokens")),
        cached,
        _count(usage.get("cache_write_tokens")),
        _count(usage.get("output_tokens")),
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
