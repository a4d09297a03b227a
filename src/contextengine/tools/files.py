"""The file tools (R3.1) that read and change one file: read, write and edit.

``file_search`` holds the ones that list and search (ls, glob, grep) on the same base.

Every path goes through ``Workspace.locate`` (descriptor walks, see ``confine``), so no
tool opens a name it checked earlier. Every refusal (outside the workspace, reserved,
special file, not found, binary, no match ...) comes back as a ``ToolOutcome`` error
with a literal code, never as an exception.
"""

from __future__ import annotations

import difflib
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import ClassVar, Generic, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contextengine.toolkit.base import ErrorCode, ToolOutcome
from contextengine.toolkit.confine import (
    PathRefused,
    open_regular,
    read_all,
    refuse_hard_link,
    replace_file,
)
from contextengine.toolkit.text_forms import number_lines, split_lines
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import Located
from contextengine.tools.context import ToolContext
from contextengine.tools.file_lines import count_lines, decode_head, looks_binary, read_lines
from contextengine.tools.tool import ArgsT

# file_edit holds the file, its edited copy and a line diff in memory: bounded by this.
EDIT_MAX_FILE_BYTES = 16 * 1024 * 1024
# file_read streams: it holds one chunk and the lines shown, and scans (to count lines or
# to reach start_line) at most this many bytes, so a huge file costs seconds, not memory.
READ_MAX_SCAN_BYTES = 256 * 1024 * 1024
SNIPPET_CONTEXT_LINES = 1
SNIPPET_MAX_CHANGED_LINES = 20


class Refusal(Exception):
    """Carries an error outcome out of a helper; ``FileTool.run`` turns it into a value."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.outcome = ToolOutcome.fail(code, message)


class StrictArgs(BaseModel):
    """Tool arguments that refuse unknown keys."""

    model_config = ConfigDict(extra="forbid")


class FileTool(ABC, Generic[ArgsT]):
    """Runs a file tool body and turns refusals and OS errors into error outcomes; a tool
    names its own argument model: ``class FileRead(FileTool["FileRead.Args"])``."""

    name: ClassVar[str]
    description: ClassVar[str]

    def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutcome:
        """Execute with validated arguments inside the context's workspace."""
        try:
            return self._run(args, ctx)
        except Refusal as refusal:
            return refusal.outcome
        except PathRefused as exc:
            return ToolOutcome.fail(exc.code, str(exc))
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            return ToolOutcome.fail("io_error", f"{self.name}{where}: {exc.strerror or exc}")

    @abstractmethod
    def _run(self, args: ArgsT, ctx: ToolContext) -> ToolOutcome:
        """The tool's body; it may raise ``Refusal``, ``PathRefused`` or ``OSError``."""


@contextmanager
def _open_file(where: Located, directory_hint: str) -> Iterator[tuple[int, os.stat_result]]:
    """A read descriptor and ``fstat`` of the regular file at ``where``."""
    try:
        with open_regular(where.spot, where.shown) as opened:
            yield opened
    except PathRefused as exc:
        if exc.code == "is_a_directory":
            hint = f"{where.shown} is a directory; {directory_hint}"
            raise Refusal("is_a_directory", hint) from None
        raise


def _refuse_binary(fd: int, shown: str) -> None:
    """Refuse a file with a NUL in its first bytes, before any more of it is read."""
    if looks_binary(fd):
        raise Refusal("binary_file", f"{shown} is a binary file; only text files can be read")


def _read_text(raw: bytes, shown: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refusal("binary_file", f"{shown} is not UTF-8 text; it cannot be read") from None


def _encode(content: str) -> bytes:
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Refusal(
            "invalid_arguments", f"content is not valid Unicode text ({exc.reason})"
        ) from None


class FileRead(FileTool["FileRead.Args"]):
    """``file_read``: numbered lines of a text file, with its mtime (R7.6)."""

    name: ClassVar[str] = "file_read"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="read")
    description: ClassVar[str] = "Numbered lines of a file (start_line..end_line) and its mtime."

    class Args(StrictArgs):
        path: str
        start_line: int | None = Field(None, ge=1)
        end_line: int | None = Field(None, ge=1)

        @model_validator(mode="after")
        def _ordered(self) -> FileRead.Args:
            if self.start_line and self.end_line and self.end_line < self.start_line:
                raise ValueError(
                    f"end_line ({self.end_line}) is before start_line ({self.start_line})"
                )
            return self

    def _run(self, args: FileRead.Args, ctx: ToolContext) -> ToolOutcome:
        with (
            ctx.workspace.locate(args.path, "read") as where,
            _open_file(where, "use file_ls to list it") as (fd, info),
        ):
            shown = where.shown
            _refuse_binary(fd, shown)
            # Counting lines reads the whole file: only for files a scan may cover.
            total = count_lines(fd) if info.st_size <= READ_MAX_SCAN_BYTES else None
            start = args.start_line or 1
            if total is not None and total and start > total:
                raise Refusal(
                    "invalid_arguments",
                    f"start_line {start} is past the end of {shown} ({total} lines)",
                )
            end = min(args.end_line or total, total) if total is not None else args.end_line
            body, last, more = _numbered_range(fd, shown, start, end, ctx.max_output_bytes)
            if total is None and not last:
                raise Refusal("invalid_arguments", f"start_line {start} is past the end of {shown}")
        real, mtime = where.real, info.st_mtime_ns
        if more:
            of = f"{total}" if total is not None else f"the lines in {info.st_size} bytes"
            body += (
                f"\n[output capped at {ctx.max_output_bytes} bytes: lines {start}-{last} of "
                f"{of} shown; read on with start_line={last + 1}]"
            )
        if total == 0:
            body = f"({shown} is empty)"
        body += f"\n\n[mtime {format_mtime(mtime)}]"
        previous = ctx.read_mtimes.get(str(real))
        modified = previous is not None and previous != mtime
        ctx.read_mtimes[str(real)] = mtime
        if modified:
            body += f"\n\nNote: {shown} was modified externally."
        data = {
            "path": shown,
            "start_line": start,
            "end_line": last,
            "total_lines": total,
            "mtime": mtime,
            "modified_externally": modified,
        }
        return ToolOutcome.ok(body, data, kind="file")


def format_mtime(mtime_ns: int) -> str:
    """An mtime in nanoseconds as UTC ISO 8601 to the second, the way ``file_read`` shows it."""
    moment = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _numbered_range(
    fd: int, shown: str, start: int, end: int | None, cap: int
) -> tuple[str, int, bool]:
    """Lines ``start..end`` numbered while under ``cap`` bytes, the last number kept, and
    whether the cap stopped them before ``end``.

    Reads the file only up to the last line kept, and never past ``READ_MAX_SCAN_BYTES``;
    a line longer than ``cap`` shows its head.
    """
    width = len(str(end or start))
    kept: list[str] = []
    size, last, scanned = 0, 0, 0
    for number, line in enumerate(read_lines(fd, cap, READ_MAX_SCAN_BYTES), 1):
        if end is not None and number > end:
            break
        scanned += line.length + 1
        if number < start:
            if scanned > READ_MAX_SCAN_BYTES or not line.ended:
                raise Refusal(
                    "limit_reached",
                    f"line {start} of {shown} is past the first {READ_MAX_SCAN_BYTES} bytes, "
                    "the most file_read scans; use the shell (sed -n, tail) for it",
                )
            continue
        try:
            text = decode_head(line)
        except UnicodeDecodeError:
            raise Refusal("binary_file", f"{shown} is not UTF-8 text; it cannot be read") from None
        if not line.ended:
            text += f"[... this line goes on past the {READ_MAX_SCAN_BYTES} bytes read]"
        elif line.cut:
            text += f"[... {line.cut} bytes of this line cut]"
        numbered = f"{number:>{width}}\t{text}"
        size += len(numbered.encode("utf-8")) + 1
        if kept and (size > cap or scanned > READ_MAX_SCAN_BYTES):
            return "\n".join(kept), last, True
        kept.append(numbered)
        last = number
    return "\n".join(kept), last, False


class FileWrite(FileTool["FileWrite.Args"]):
    """``file_write``: create or overwrite a file with the given content."""

    name: ClassVar[str] = "file_write"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(
        category="write", risk="overwrite", compressor="write"
    )
    description: ClassVar[str] = "Write a file with exactly this content (creates folders)."

    class Args(StrictArgs):
        path: str
        content: str

    def _run(self, args: FileWrite.Args, ctx: ToolContext) -> ToolOutcome:
        encoded = _encode(args.content)
        with ctx.workspace.locate(args.path, "write", create_dirs=True) as where:
            existed, info = replace_file(where.spot, where.shown, encoded)
        shown = where.shown
        ctx.read_mtimes[str(where.real)] = info.st_mtime_ns
        lines = len(split_lines(args.content))
        size = len(args.content.encode("utf-8"))
        action: Literal["created", "overwritten"] = "overwritten" if existed else "created"
        verb = "Overwrote" if existed else "Created"
        data = {"path": shown, "action": action, "lines": lines, "bytes": size}
        return ToolOutcome.ok(f"{verb} {shown} ({lines} lines, {size} bytes).", data)


class EditOp(StrictArgs):
    """One exact replacement of a multi-edit."""

    old_text: str = Field(min_length=1)
    new_text: str
    replace_all: bool = False

    @model_validator(mode="after")
    def _changes(self) -> EditOp:
        _check_change(self.old_text, self.new_text)
        return self


def _check_change(old_text: str, new_text: str) -> None:
    if not old_text:
        raise ValueError("old_text must not be empty")
    if old_text == new_text:
        raise ValueError("old_text and new_text are identical; nothing would change")


class FileEdit(FileTool["FileEdit.Args"]):
    """``file_edit``: exact text replacement, one edit or several applied all-or-nothing."""

    name: ClassVar[str] = "file_edit"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="write", compressor="edit")
    description: ClassVar[str] = (
        "Replace exact old_text with new_text (every match: replace_all); edits: several."
    )

    class Args(StrictArgs):
        path: str
        old_text: str | None = None
        new_text: str | None = None
        replace_all: bool = False
        edits: list[EditOp] | None = Field(
            None,
            min_length=1,
        )

        @model_validator(mode="after")
        def _one_form(self) -> FileEdit.Args:
            single = self.old_text is not None or self.new_text is not None
            if self.edits is not None and (single or self.replace_all):
                raise ValueError("give either old_text/new_text/replace_all or edits, not both")
            if self.edits is None:
                if self.old_text is None or self.new_text is None:
                    raise ValueError("give old_text and new_text (or a list of edits)")
                _check_change(self.old_text, self.new_text)
            return self

        def operations(self) -> list[EditOp]:
            """The edits to apply, in order."""
            if self.edits is not None:
                return self.edits
            # _one_form has checked that both texts are set on this form.
            single = EditOp(
                old_text=self.old_text,  # type: ignore[arg-type]
                new_text=self.new_text,  # type: ignore[arg-type]
                replace_all=self.replace_all,
            )
            return [single]

    def _run(self, args: FileEdit.Args, ctx: ToolContext) -> ToolOutcome:
        ops = args.operations()
        with ctx.workspace.locate(args.path, "write") as where:
            with _open_file(where, "give a file path") as (fd, info):
                refuse_hard_link(info, where.shown)
                if info.st_size > EDIT_MAX_FILE_BYTES:
                    raise Refusal(
                        "limit_reached",
                        f"{where.shown} is {info.st_size} bytes; file_edit takes files up to "
                        f"{EDIT_MAX_FILE_BYTES} bytes (use shell tools for bigger ones)",
                    )
                _refuse_binary(fd, where.shown)
                original = _read_text(read_all(fd, EDIT_MAX_FILE_BYTES + 1), where.shown)
            content, replacements = _apply(ops, original, where.shown)
            info = replace_file(where.spot, where.shown, _encode(content))[1]
        shown = where.shown
        ctx.read_mtimes[str(where.real)] = info.st_mtime_ns
        new_lines = split_lines(content)
        ranges = changed_ranges(split_lines(original), new_lines)
        snippets = [_snippet(new_lines, start, end) for start, end in ranges]
        changed = ", ".join(f"{s}-{e}" if e != s else str(s) for s, e in ranges) or "none"
        text = f"Edited {shown}: {replacements} replacement(s); changed lines {changed}."
        if snippets:
            text += "\n" + "\n...\n".join(snippets)
        data = {
            "path": shown,
            "edits": len(ops),
            "replacements": replacements,
            "changed_lines": [list(r) for r in ranges],
            "snippets": snippets,
        }
        return ToolOutcome.ok(text, data)


def _apply(ops: list[EditOp], content: str, shown: str) -> tuple[str, int]:
    """``content`` with every edit applied in order, and the number of replacements."""
    replacements = 0
    for number, op in enumerate(ops, 1):
        where = f"edit {number} of {len(ops)}: " if len(ops) > 1 else ""
        unchanged = " No edit was applied." if len(ops) > 1 else ""
        count = content.count(op.old_text)
        if count == 0:
            raise Refusal("no_match", f"{where}old_text not found in {shown}.{unchanged}")
        if count > 1 and not op.replace_all:
            lines = ", ".join(map(str, _occurrence_lines(content, op.old_text)))
            raise Refusal(
                "ambiguous_match",
                f"{where}old_text occurs {count} times in {shown} (lines {lines}); "
                f"add surrounding text to make it unique or set replace_all.{unchanged}",
            )
        content = content.replace(op.old_text, op.new_text, -1 if op.replace_all else 1)
        replacements += count if op.replace_all else 1
    return content, replacements


def _occurrence_lines(content: str, needle: str) -> list[int]:
    lines, at = [], content.find(needle)
    while at != -1:
        lines.append(content.count("\n", 0, at) + 1)
        at = content.find(needle, at + len(needle))
    return lines


def changed_ranges(before: list[str], after: list[str]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of ``after`` that differ from ``before`` (merged)."""
    ranges: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or not after:
            continue
        # A pure deletion has no new lines: point at the line it happened after.
        start, end = (j1 + 1, j2) if j2 > j1 else (max(j1, 1), max(j1, 1))
        if ranges and start <= ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], max(end, ranges[-1][1]))
        else:
            ranges.append((start, end))
    return ranges


def _snippet(lines: list[str], start: int, end: int) -> str:
    first = max(1, start - SNIPPET_CONTEXT_LINES)
    last_changed = min(end, start + SNIPPET_MAX_CHANGED_LINES - 1)
    last = min(len(lines), last_changed + SNIPPET_CONTEXT_LINES)
    if last_changed < end:
        last = last_changed
    numbered = number_lines(lines[first - 1 : last], first)
    if last_changed < end:
        numbered.append(f"[... {end - last_changed} more changed lines]")
    return "\n".join(numbered)
