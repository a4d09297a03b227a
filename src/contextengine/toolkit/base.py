"""The values a tool returns (the tool protocol itself is ``contextengine.tools.tool``).

Tool-facing errors are values (``ToolError`` with a literal ``code`` a model can read),
never exceptions through the loop. Tools never touch the session: they get a
``ToolContext`` (the workspace and per-session tool state) and return a ``ToolOutcome``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ToolStatus = Literal["success", "error"]
ObservationKind = Literal["file", "webpage", "db", "other"]

ErrorCode = Literal[
    "invalid_arguments",
    "unknown_tool",
    "masked_tool",
    "outside_workspace",
    "reserved_path",
    "special_file",
    "hard_link",
    "symlink",
    "invalid_path",
    "not_found",
    "is_a_directory",
    "not_a_directory",
    "binary_file",
    "no_match",
    "ambiguous_match",
    "nonzero_exit",
    "timeout",
    "io_error",
    "sandbox_unavailable",
    "unavailable",
    "blocked_url",
    "robots_disallowed",
    "http_error",
    "network_error",
    "not_text",
    "limit_reached",
    "subagent_failed",
    "tool_failed",
    "protocol_error",
    "exception",
]


@dataclass(frozen=True)
class ToolError:
    """A failure a model can read: a literal code and the unmodified message."""

    code: ErrorCode
    message: str


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced.

    ``text`` is the full observation, verbatim (error text, traceback, exit code and
    stderr included). ``data`` is the structured result that the per-tool compressor
    reduces for history. ``kind`` selects the externalization threshold.
    """

    status: ToolStatus
    text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    error: ToolError | None = None
    kind: ObservationKind = "other"

    @classmethod
    def ok(
        cls, text: str, data: Mapping[str, Any] | None = None, kind: ObservationKind = "other"
    ) -> ToolOutcome:
        """A successful outcome."""
        return cls("success", text, dict(data or {}), None, kind)

    @classmethod
    def fail(
        cls,
        code: ErrorCode,
        message: str,
        text: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> ToolOutcome:
        """A failed outcome; ``text`` defaults to the error message."""
        return cls(
            "error", message if text is None else text, dict(data or {}), ToolError(code, message)
        )
