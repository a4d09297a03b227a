"""Per-tool compression of observations for history (R7.3, seed 003 A3 and C1).

The history form of a tool result is canonical JSON ``{"status", "data", "error"}``:
``data`` reduced per tool category, ``error`` (code and message) kept whole and only on
failure; ``text``, stats and call context dropped. Observations of other harnesses (raw
text, no data) are mapped to a category by tool name and compressed as text. Every cut
leaves a marker saying how much was cut and where the full text can be read back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from contextengine.canonical import canonical_json
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import TRACEBACK_HEADER, stderr_tail
from contextengine.toolkit.text_forms import format_ls_entry, number_lines, split_lines
from contextengine.toolkit.traits import Compressor
from contextengine.untrusted import JSONObject

Category = Compressor

LS_KEEP = 20
GLOB_KEEP = 10
GREP_KEEP = 5
READ_KEEP = 500
WRITE_KEEP = 30
EDIT_SNIPPETS_KEEP = 3
EDIT_TEXT_KEEP = 30
STDERR_TAIL = 20
STDOUT_HEAD = 5
STDOUT_TAIL = 10
RAW_SHELL_HEAD = 5
RAW_SHELL_TAIL = 20
TODO_RECAP_CHARS = 300
MAX_LINE_CHARS = 2000
OTHER_HEAD_CHARS = 1500
OTHER_TAIL_CHARS = 500

# Well-known tools of other harnesses: Claude Code, OpenHands (``execute_bash``, the SDK's
# ``terminal``), Codex (``shell``, ``exec_command``, ``apply_patch``, ``list_dir``,
# ``grep_files``), Gemini CLI (``run_shell_command``, ``read_many_files``, ``replace``,
# ``list_directory``, ``search_file_content``), deepagents (``execute``, ``edit_file``) and
# Cline (``execute_command``, ``write_to_file``, ``replace_in_file``, ``list_files``).
_FOREIGN_NAMES: Mapping[str, Category] = {
    **dict.fromkeys(
        (
            "bash",
            "execute_bash",
            "shell",
            "run_command",
            "terminal",
            "exec_command",
            "shell_command",
            "run_shell_command",
            "execute",
            "execute_command",
        ),
        "shell",
    ),
    **dict.fromkeys(("read", "read_file", "view", "read_many_files"), "read"),
    **dict.fromkeys(
        ("edit", "multiedit", "edit_file", "replace", "apply_patch", "replace_in_file"), "edit"
    ),
    **dict.fromkeys(("write", "write_file", "write_to_file"), "write"),
    **dict.fromkeys(
        ("grep", "grep_search", "search_file_content", "grep_files", "search_files"), "grep"
    ),
    "glob": "glob",
    **dict.fromkeys(("ls", "list_dir", "list_directory", "list_files"), "ls"),
    **dict.fromkeys(("todowrite", "write_todos", "update_plan"), "todo"),
}
_EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "file_editor"})
_EDITOR_COMMANDS: Mapping[str, Category] = {
    "view": "read",
    "create": "write",
    "str_replace": "edit",
    "insert": "edit",
    "undo_edit": "edit",
}


def tool_category(tool_name: str, arguments: Mapping[str, Any] | None = None) -> Category:
    """The compression category of another harness's tool, by its well-known name
    (case-insensitive); editor tools are categorized by their ``command`` argument."""
    name = tool_name.lower()
    if name in _EDITOR_TOOLS:
        return _EDITOR_COMMANDS.get(str((arguments or {}).get("command", "")).lower(), "other")
    return _FOREIGN_NAMES.get(name, "other")


@dataclass(frozen=True)
class Compressed:
    """A history form and whether anything of the observation was left out of it."""

    text: str
    cut: bool


def compress(
    tool_name: str,
    arguments: Mapping[str, Any],
    outcome: ToolOutcome,
    *,
    full_ref: str | None = None,
    compressor: Compressor | None = None,
) -> Compressed:
    """Compress ``outcome`` for history; markers point to ``full_ref`` when given.

    ``compressor`` is the one the tool declares (``ToolTraits.compressor``): its structured
    form reduces ``data``; a tool declaring none is another harness's, categorized by name.
    """
    cuts = _Cuts(full_ref)
    error = outcome.status == "error"
    if outcome.data and compressor is not None:
        data = _NATIVE[compressor](outcome, arguments, cuts)
    elif outcome.error is not None and outcome.text == outcome.error.message:
        data = {}
    else:
        category = compressor or tool_category(tool_name, arguments)
        data = _RAW[category](outcome.text, arguments, cuts, error)
    history: JSONObject = {"status": outcome.status, "data": data}
    if error and outcome.error is not None:
        history["error"] = {"code": outcome.error.code, "message": outcome.error.message}
    return Compressed(canonical_json(history), cuts.cut)


def compress_observation(
    tool_name: str,
    arguments: Mapping[str, Any],
    outcome: ToolOutcome,
    *,
    full_ref: str | None = None,
    compressor: Compressor | None = None,
) -> str:
    """The history form of a tool result: canonical JSON, compressed per tool."""
    return compress(tool_name, arguments, outcome, full_ref=full_ref, compressor=compressor).text


class _Cuts:
    """Makes cut markers and remembers whether anything was cut."""

    def __init__(self, full_ref: str | None) -> None:
        self.full_ref = full_ref
        self.cut = False

    def marker(self, what: str) -> str:
        self.cut = True
        where = self.full_ref or "the session's artifacts"
        return f"[... {what} cut; the full text is recoverable from {where}]"

    def line(self, line: str) -> str:
        if len(line) <= MAX_LINE_CHARS:
            return line
        return line[:MAX_LINE_CHARS] + self.marker(f"{len(line) - MAX_LINE_CHARS} chars")

    def lines(self, lines: list[str], head: int, tail: int = 0) -> str:
        """The first ``head`` and last ``tail`` lines, a marker in between."""
        if len(lines) > head + tail:
            dropped = len(lines) - head - tail
            middle = [self.marker(f"{dropped} of {len(lines)} lines")]
            lines = lines[:head] + middle + (lines[len(lines) - tail :] if tail else [])
        return "\n".join(self.line(line) for line in lines)

    def error_lines(self, lines: list[str], head: int, tail: int, error: bool) -> str:
        """Like ``lines``, but on an error the tail reaches back to the last traceback."""
        if error:
            start = _last_traceback(lines)
            if start is not None:
                tail = max(tail, len(lines) - start)
        return self.lines(lines, min(head, max(0, len(lines) - tail)), tail)

    def items(self, items: list[str], keep: int, total: int, noun: str) -> JSONObject:
        out: JSONObject = {noun: [self.line(i) for i in items[:keep]]}
        if total > keep:
            out["more"] = self.marker(f"{total - keep} of {total} {noun}")
        return out

    def chars(self, text: str, error: bool) -> str:
        """Head and tail of a text; on an error everything from the last traceback on."""
        tail = OTHER_TAIL_CHARS
        if error and (at := text.rfind(TRACEBACK_HEADER)) != -1:
            tail = max(tail, len(text) - at)
        if len(text) <= OTHER_HEAD_CHARS + tail:
            return text
        dropped = len(text) - OTHER_HEAD_CHARS - tail
        marker = self.marker(f"{dropped} of {len(text)} chars")
        return f"{text[:OTHER_HEAD_CHARS]}\n{marker}\n{text[len(text) - tail :]}"


def _last_traceback(lines: list[str]) -> int | None:
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].lstrip().startswith(TRACEBACK_HEADER):
            return index
    return None


# Our own tools: structured data.


def _read(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    shown = data["end_line"] - data["start_line"] + 1 if data["end_line"] else 0
    out = {k: data[k] for k in ("path", "start_line", "end_line", "total_lines", "mtime")}
    out["content"] = cuts.lines(outcome.text.split("\n")[:shown], READ_KEEP)
    if data.get("modified_externally"):
        out["note"] = f"Note: {data['path']} was modified externally."
    return out


def _write(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    lines = split_lines(str(arguments.get("content", "")))
    head = [cuts.line(line) for line in number_lines(lines[:WRITE_KEEP], 1)]
    if len(lines) > WRITE_KEEP:
        head.append(
            f"[... {len(lines) - WRITE_KEEP} more lines not repeated; they are in this "
            f"call's content and in {data['path']}]"
        )
    out = {k: data[k] for k in ("path", "action", "lines", "bytes")}
    out["head"] = "\n".join(head)
    return out


def _edit(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    out = {k: data[k] for k in ("path", "edits", "replacements", "changed_lines")}
    snippets = list(data.get("snippets", []))
    out["snippets"] = snippets[:EDIT_SNIPPETS_KEEP]
    if len(snippets) > EDIT_SNIPPETS_KEEP:
        out["more"] = cuts.marker(f"{len(snippets) - EDIT_SNIPPETS_KEEP} snippets")
    return out


def _ls(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    total = sum(data["counts"].values())
    entries = [format_ls_entry(e) for e in data["entries"][:LS_KEEP]]
    return {
        "dir": data["dir"],
        "counts": data["counts"],
        **cuts.items(entries, LS_KEEP, total, "entries"),
    }


def _glob(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    kept = cuts.items(list(data["matches"]), GLOB_KEEP, data["count"], "matches")
    return {"pattern": data["pattern"], "count": data["count"], **kept}


def _grep(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    summary = f"{data['count']} matches in {data['files']} files"
    if data.get("truncated"):
        summary += " (search stopped at this many)"
    kept = cuts.items(list(data["matches"]), GREP_KEEP, data["count"], "matches")
    return {"pattern": data["pattern"], "path": data["path"], "summary": summary, **kept}


def _shell(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    data = outcome.data
    error = outcome.status == "error"
    out: JSONObject = {
        k: data[k] for k in ("exit_code", "stdout_lines", "stderr_lines", "timed_out")
    }
    stderr = str(data["stderr"])
    tail = cuts.error_lines(stderr.splitlines(), 0, STDERR_TAIL, error)
    # A failed command's message already holds the stderr tail; don't repeat it.
    if tail and not (outcome.error and stderr_tail(stderr) in outcome.error.message):
        out["stderr_tail"] = tail
    out["stdout"] = cuts.error_lines(
        str(data["stdout"]).splitlines(), STDOUT_HEAD, STDOUT_TAIL, error
    )
    return out


def _todo(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    return {"recap": outcome.data.get("recap", outcome.text)}


def _other(outcome: ToolOutcome, arguments: Mapping[str, Any], cuts: _Cuts) -> JSONObject:
    return {"text": cuts.chars(outcome.text, outcome.status == "error")}


_NATIVE: Mapping[Category, Callable[[ToolOutcome, Mapping[str, Any], _Cuts], JSONObject]] = {
    "read": _read,
    "write": _write,
    "edit": _edit,
    "ls": _ls,
    "glob": _glob,
    "grep": _grep,
    "shell": _shell,
    "todo": _todo,
    "other": _other,
}


# Other harnesses' tools: raw text only.


def _path_of(arguments: Mapping[str, Any]) -> JSONObject:
    path = arguments.get("path") or arguments.get("file_path")
    return {"path": str(path)} if path else {}


def _raw_read(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    return {**_path_of(arguments), "content": cuts.lines(split_lines(text), READ_KEEP)}


def _raw_write(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    content = arguments.get("content", arguments.get("file_text"))
    out = {**_path_of(arguments), "result": cuts.chars(text, error)}
    if isinstance(content, str) and not error:
        lines = split_lines(content)
        head = number_lines(lines[:WRITE_KEEP], 1)
        if len(lines) > WRITE_KEEP:
            head.append(f"[... {len(lines) - WRITE_KEEP} more lines in this call's content]")
        out["head"] = "\n".join(cuts.line(line) for line in head)
    return out


def _raw_edit(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    return {
        **_path_of(arguments),
        "result": cuts.error_lines(split_lines(text), EDIT_TEXT_KEEP, 0, error),
    }


_RawCompressor = Callable[[str, Mapping[str, Any], _Cuts, bool], JSONObject]


def _raw_listing(keep: int, noun: str) -> _RawCompressor:
    def compress_listing(
        text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool
    ) -> JSONObject:
        lines = split_lines(text)
        return {"lines": len(lines), noun: cuts.error_lines(lines, keep, 0, error)}

    return compress_listing


def _raw_shell(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    lines = split_lines(text)
    return {
        "lines": len(lines),
        "output": cuts.error_lines(lines, RAW_SHELL_HEAD, RAW_SHELL_TAIL, error),
    }


def _raw_todo(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    recap = text.strip().split("\n", 1)[0]
    if len(recap) > TODO_RECAP_CHARS:
        recap = recap[:TODO_RECAP_CHARS] + cuts.marker(f"{len(recap) - TODO_RECAP_CHARS} chars")
    elif len(recap) < len(text.strip()):
        recap += " " + cuts.marker("the rest of the todo text")
    return {"recap": recap}


def _raw_other(text: str, arguments: Mapping[str, Any], cuts: _Cuts, error: bool) -> JSONObject:
    return {"text": cuts.chars(text, error)}


_RAW: Mapping[Category, _RawCompressor] = {
    "read": _raw_read,
    "write": _raw_write,
    "edit": _raw_edit,
    "ls": _raw_listing(LS_KEEP, "listing"),
    "glob": _raw_listing(GLOB_KEEP, "matches"),
    "grep": _raw_listing(GREP_KEEP, "matches"),
    "shell": _raw_shell,
    "todo": _raw_todo,
    "other": _raw_other,
}
