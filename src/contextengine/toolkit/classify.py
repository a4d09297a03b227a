"""Error classes of failed tool calls (R5.3), for the 3-strike counter.

A class is a short stable name: ``SyntaxError``, ``ImportError``, ``test_failure``,
``timeout``, ``invalid_tool_call``, ``masked_tool``, ``not_found``, the exception name of a
Python traceback (``NameError``, ``TypeError`` ...), ``command_not_found``, else
``nonzero_exit`` or the error code itself. Another harness's failure (no error code) that
states a failing exit status is ``nonzero_exit`` too, else ``error``.
"""

from __future__ import annotations

import re

from contextengine.toolkit.base import ToolOutcome

TRACEBACK_HEADER = "Traceback (most recent call last):"
STDERR_TAIL_LINES = 20
STDERR_TAIL_CHARS = 3000  # twenty lines of a log or of JSON can be longer than a message should

_CODE_CLASSES = {
    "invalid_arguments": "invalid_tool_call",
    "unknown_tool": "invalid_tool_call",
    "masked_tool": "masked_tool",
    "timeout": "timeout",
    "not_found": "not_found",
}
_TEST_FAILURE = re.compile(
    r"^=+ .*\b\d+ failed\b.*=+$"  # pytest summary line
    r"|^FAILED \S+"  # pytest -rf short summary
    r"|^FAILED \((?:failures|errors)=\d+"  # unittest
    r"|^\s*tests finished: .*\b[1-9]\d* (?:failed|exceptions?)\b"  # sympy's bin/test
    r"|\b\d+ tests?, [1-9]\d* failures?\b",  # ExUnit
    re.MULTILINE,
)
_SYNTAX = re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b(?::|$)", re.MULTILINE)
_IMPORT = re.compile(r"\b(?:ImportError|ModuleNotFoundError)\b(?::|$)|\bNo module named\b", re.M)
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")
# Another harness's shell tool states its exit status in the text: mini-swe-agent's
# ``<returncode>``, OpenHands' ``[Command finished with exit code N]``, Claude Code's
# ``Exit code N``.
_EXIT_STATUS_ELEMENT = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_STATUS_LINE = re.compile(
    r"^\[?(?:(?:the )?command (?:finished|completed) with )?exit code:? (-?\d+)\.?\]?$",
    re.IGNORECASE | re.MULTILINE,
)
_COMMAND_NOT_FOUND = re.compile(
    r"\bcommand not found\b|^bash: .*: No such file or directory$", re.M
)


def classify_error(tool_name: str, outcome: ToolOutcome) -> str | None:
    """The error class of a failed outcome; ``None`` on success."""
    if outcome.status == "success":
        return None
    code = outcome.error.code if outcome.error else None
    if code in _CODE_CLASSES:
        return _CODE_CLASSES[code]
    text = outcome.error.message if code == "exception" and outcome.error else outcome.text
    if code in (None, "exception", "nonzero_exit"):
        return _class_of_text(text) or code or _exit_class(text)
    return code


def exit_statuses(text: str) -> list[int]:
    """The exit statuses another harness's shell output states."""
    found = _EXIT_STATUS_ELEMENT.findall(text) + _EXIT_STATUS_LINE.findall(text)
    return [int(status) for status in found]


def without_exit_statuses(text: str) -> str:
    """``text`` with the exit statuses another harness's shell output states removed."""
    return _EXIT_STATUS_LINE.sub("", _EXIT_STATUS_ELEMENT.sub("", text))


def _exit_class(text: str) -> str:
    """``nonzero_exit`` for a foreign failure that states a failing exit status, as
    ``shell_exec``'s would be, else ``error``."""
    return "nonzero_exit" if any(exit_statuses(text)) else "error"


def _class_of_text(text: str) -> str | None:
    if _TEST_FAILURE.search(text):
        return "test_failure"
    if _SYNTAX.search(text):
        return "SyntaxError"
    if _IMPORT.search(text):
        return "ImportError"
    name = traceback_exception(text)
    if name is not None:
        return name
    if _COMMAND_NOT_FOUND.search(text):
        return "command_not_found"
    return None


def traceback_exception(text: str) -> str | None:
    """The exception name (last dotted part) ending the last Python traceback in ``text``."""
    at = text.rfind(TRACEBACK_HEADER)
    if at == -1:
        return None
    for line in text[at + len(TRACEBACK_HEADER) :].splitlines():
        if not line or line[0].isspace():
            continue
        found = _EXCEPTION_LINE.match(line)
        if found:
            return found.group(1).rsplit(".", 1)[-1]
    return None


def error_tail(text: str, lines: int, *, chars: int | None = None) -> str:
    """The last ``lines`` lines of ``text``, extended back to the start of the last Python
    traceback when one begins earlier, so a stack trace is never cut by lines (R5.1);
    with ``chars``, at most that many of its last characters, an ellipsis marking the cut
    (a few lines of minified JSON or a log can be longer than the whole output should)."""
    all_lines = text.splitlines()
    start = max(0, len(all_lines) - lines)
    for index in range(len(all_lines) - 1, -1, -1):
        if all_lines[index].lstrip().startswith(TRACEBACK_HEADER):
            start = min(start, index)
            break
    tail = "\n".join(all_lines[start:])
    if chars is None or len(tail) <= chars:
        return tail
    return "…" + tail[-(chars - 1) :]


def stderr_tail(stderr: str) -> str:
    """The end of a failed command's stderr that its error message quotes verbatim (R5.1):
    its last ``STDERR_TAIL_LINES`` lines, at most ``STDERR_TAIL_CHARS`` characters."""
    return error_tail(stderr, STDERR_TAIL_LINES, chars=STDERR_TAIL_CHARS)
