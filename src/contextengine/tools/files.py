"""The file tools (R3.1): read, write, edit, list, glob and grep inside the workspace.

Every refusal (outside the workspace, not found, binary, no match ...) comes back as a
``ToolOutcome`` error with a literal code, never as an exception.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contextengine.tools.base import ErrorCode, ToolOutcome
from contextengine.tools.context import ToolContext
from contextengine.tools.workspace import OutsideWorkspace

BINARY_SNIFF_BYTES = 8192
LS_MAX_ENTRIES = 1000
GLOB_MAX_RESULTS = 1000
GREP_MAX_MATCHES = 1000
GREP_MAX_LINE_CHARS = 500
GREP_SKIP_DIRS = frozenset({".git", ".contextengine", "node_modules", "__pycache__"})
SNIPPET_CONTEXT_LINES = 3
SNIPPET_MAX_CHANGED_LINES = 20


class _Refusal(Exception):
    """Carries an error outcome out of a helper; never leaves this module."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.outcome = ToolOutcome.fail(code, message)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _FileTool:
    """Runs a file tool body and turns refusals and OS errors into error outcomes."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]

    def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        """Execute with validated arguments inside the context's workspace."""
        try:
            return self._run(args, ctx)
        except _Refusal as refusal:
            return refusal.outcome
        except OutsideWorkspace as exc:
            return ToolOutcome.fail("outside_workspace", str(exc))
        except OSError as exc:
            where = ctx.workspace.display(Path(exc.filename)) if exc.filename else self.name
            return ToolOutcome.fail("io_error", f"{where}: {exc.strerror or exc}")

    def _run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        raise NotImplementedError


def _existing(ctx: ToolContext, path: str) -> tuple[Path, str]:
    real = ctx.workspace.resolve(path)
    shown = ctx.workspace.display(real)
    if not real.exists():
        raise _Refusal("not_found", f"{shown}: no such file or directory")
    return real, shown


def _read_text(real: Path, shown: str) -> str:
    raw = real.read_bytes()
    if b"\0" in raw[:BINARY_SNIFF_BYTES]:
        raise _Refusal("binary_file", f"{shown} is a binary file; only text files can be read")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refusal("binary_file", f"{shown} is not UTF-8 text; it cannot be read") from None


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (``\\r`` kept), without the empty piece after a final newline."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], first: int) -> list[str]:
    """``cat -n`` style numbering starting at line ``first``."""
    return [f"{n:>6}\t{line}" for n, line in enumerate(lines, first)]


def _write_text(real: Path, content: str) -> None:
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Refusal(
            "invalid_arguments", f"content is not valid Unicode text ({exc.reason})"
        ) from None
    real.parent.mkdir(parents=True, exist_ok=True)
    real.write_bytes(data)


class FileRead(_FileTool):
    """``file_read``: numbered lines of a text file, with its mtime (R7.6)."""

    name: ClassVar[str] = "file_read"
    description: ClassVar[str] = (
        "Read a text file of the workspace as numbered lines (like `cat -n`). Give "
        "start_line/end_line (1-based, inclusive) to read part of a long file. The result "
        "carries the file's mtime; a re-read notes when the file changed since you last read it."
    )

    class Args(_Args):
        path: str = Field(description="File path relative to the workspace.")
        start_line: int | None = Field(
            None, ge=1, description="First line to read, 1-based. Default: 1."
        )
        end_line: int | None = Field(
            None, ge=1, description="Last line to read, inclusive. Default: the end of the file."
        )

        @model_validator(mode="after")
        def _ordered(self) -> FileRead.Args:
            if self.start_line and self.end_line and self.end_line < self.start_line:
                raise ValueError(
                    f"end_line ({self.end_line}) is before start_line ({self.start_line})"
                )
            return self

    def _run(self, args: FileRead.Args, ctx: ToolContext) -> ToolOutcome:
        real, shown = _existing(ctx, args.path)
        if real.is_dir():
            raise _Refusal("is_a_directory", f"{shown} is a directory; use file_ls to list it")
        mtime = real.stat().st_mtime_ns
        lines = split_lines(_read_text(real, shown))
        total = len(lines)
        start = args.start_line or 1
        if total and start > total:
            raise _Refusal(
                "invalid_arguments",
                f"start_line {start} is past the end of {shown} ({total} lines)",
            )
        wanted_end = min(args.end_line or total, total)
        numbered = number_lines(lines[start - 1 : wanted_end], start)
        body, end = _capped(numbered, ctx.max_output_bytes)
        if end < wanted_end:
            body += (
                f"\n[output capped at {ctx.max_output_bytes} bytes: lines {start}-{end} of "
                f"{total} shown; read on with start_line={end + 1}]"
            )
        if not total:
            body = f"({shown} is empty)"
        previous = ctx.read_mtimes.get(str(real))
        modified = previous is not None and previous != mtime
        ctx.read_mtimes[str(real)] = mtime
        if modified:
            body += f"\n\nNote: {shown} was modified externally."
        data = {
            "path": shown,
            "start_line": start,
            "end_line": end,
            "total_lines": total,
            "mtime": mtime,
            "modified_externally": modified,
        }
        return ToolOutcome.ok(body, data, kind="file")


def _capped(numbered: list[str], cap: int) -> tuple[str, int]:
    """Join numbered lines while under ``cap`` bytes; also return the last line number kept."""
    kept, size = [], 0
    for line in numbered:
        size += len(line.encode("utf-8")) + 1
        if size > cap and kept:
            break
        kept.append(line)
    last = int(kept[-1].split("\t", 1)[0]) if kept else 0
    return "\n".join(kept), last


class FileWrite(_FileTool):
    """``file_write``: create or overwrite a file with the given content."""

    name: ClassVar[str] = "file_write"
    description: ClassVar[str] = (
        "Write a file of the workspace with exactly the given content, creating parent "
        "folders as needed. Overwrites an existing file."
    )

    class Args(_Args):
        path: str = Field(description="File path relative to the workspace.")
        content: str = Field(description="The complete new content of the file.")

    def _run(self, args: FileWrite.Args, ctx: ToolContext) -> ToolOutcome:
        real = ctx.workspace.resolve(args.path)
        shown = ctx.workspace.display(real)
        if real.is_dir():
            raise _Refusal("is_a_directory", f"{shown} is a directory; give a file path")
        existed = real.exists()
        _write_text(real, args.content)
        ctx.read_mtimes[str(real)] = real.stat().st_mtime_ns
        lines = len(split_lines(args.content))
        size = len(args.content.encode("utf-8"))
        action: Literal["created", "overwritten"] = "overwritten" if existed else "created"
        verb = "Overwrote" if existed else "Created"
        data = {"path": shown, "action": action, "lines": lines, "bytes": size}
        return ToolOutcome.ok(f"{verb} {shown} ({lines} lines, {size} bytes).", data)


class EditOp(_Args):
    """One exact replacement of a multi-edit."""

    old_text: str = Field(min_length=1, description="Exact text to replace, whitespace included.")
    new_text: str = Field(description="Replacement text.")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one."
    )

    @model_validator(mode="after")
    def _changes(self) -> EditOp:
        _check_change(self.old_text, self.new_text)
        return self


def _check_change(old_text: str, new_text: str) -> None:
    if not old_text:
        raise ValueError("old_text must not be empty")
    if old_text == new_text:
        raise ValueError("old_text and new_text are identical; nothing would change")


class FileEdit(_FileTool):
    """``file_edit``: exact text replacement, one edit or several applied all-or-nothing."""

    name: ClassVar[str] = "file_edit"
    description: ClassVar[str] = (
        "Edit a text file by exact replacement: old_text must occur exactly once unless "
        "replace_all is true. For several changes to one file give `edits` instead; they are "
        "applied in order and either all succeed or the file is left unchanged."
    )

    class Args(_Args):
        path: str = Field(description="File path relative to the workspace.")
        old_text: str | None = Field(
            None, description="Exact text to replace, whitespace included."
        )
        new_text: str | None = Field(None, description="Replacement text.")
        replace_all: bool = Field(
            False, description="Replace every occurrence instead of requiring exactly one."
        )
        edits: list[EditOp] | None = Field(
            None,
            min_length=1,
            description="Several edits applied in order (instead of old_text/new_text).",
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
            return [
                EditOp(old_text=self.old_text, new_text=self.new_text, replace_all=self.replace_all)
            ]  # type: ignore[arg-type]

    def _run(self, args: FileEdit.Args, ctx: ToolContext) -> ToolOutcome:
        ops = args.operations()
        real, shown = _existing(ctx, args.path)
        if real.is_dir():
            raise _Refusal("is_a_directory", f"{shown} is a directory; give a file path")
        original = _read_text(real, shown)
        content, replacements = original, 0
        for number, op in enumerate(ops, 1):
            where = f"edit {number} of {len(ops)}: " if len(ops) > 1 else ""
            unchanged = " No edit was applied." if len(ops) > 1 else ""
            count = content.count(op.old_text)
            if count == 0:
                raise _Refusal("no_match", f"{where}old_text not found in {shown}.{unchanged}")
            if count > 1 and not op.replace_all:
                lines = ", ".join(map(str, _occurrence_lines(content, op.old_text)))
                raise _Refusal(
                    "ambiguous_match",
                    f"{where}old_text occurs {count} times in {shown} (lines {lines}); "
                    f"add surrounding text to make it unique or set replace_all.{unchanged}",
                )
            content = content.replace(op.old_text, op.new_text, -1 if op.replace_all else 1)
            replacements += count if op.replace_all else 1
        _write_text(real, content)
        ctx.read_mtimes[str(real)] = real.stat().st_mtime_ns
        new_lines = split_lines(content)
        ranges = changed_ranges(split_lines(original), new_lines)
        snippets = [_snippet(new_lines, start, end) for start, end in ranges]
        where = ", ".join(f"{s}-{e}" if e != s else str(s) for s, e in ranges) or "none"
        text = f"Edited {shown}: {replacements} replacement(s); changed lines {where}."
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


class FileLs(_FileTool):
    """``file_ls``: the entries of a directory, sorted, with type and size."""

    name: ClassVar[str] = "file_ls"
    description: ClassVar[str] = (
        "List a directory of the workspace: sorted entries with their type (file, dir, link) "
        "and size in bytes."
    )

    class Args(_Args):
        path: str = Field(
            ".", description="Directory relative to the workspace. Default: its root."
        )

    def _run(self, args: FileLs.Args, ctx: ToolContext) -> ToolOutcome:
        real, shown = _existing(ctx, args.path)
        if not real.is_dir():
            raise _Refusal("not_a_directory", f"{shown} is not a directory; use file_read")
        with os.scandir(real) as scan:
            entries = sorted((_ls_entry(e) for e in scan), key=lambda e: e["name"])
        counts = {
            kind: sum(1 for e in entries if e["type"] == kind[:-1])
            for kind in ("dirs", "files", "links")
        }
        kept = entries[:LS_MAX_ENTRIES]
        lines = [
            f"{shown}: {counts['dirs']} dirs, {counts['files']} files, {counts['links']} links"
        ]
        lines += [format_ls_entry(e) for e in kept]
        if len(entries) > len(kept):
            lines.append(f"[... {len(entries) - len(kept)} more entries not listed]")
        data = {
            "dir": shown,
            "counts": counts,
            "entries": kept,
            "truncated": len(entries) > len(kept),
        }
        return ToolOutcome.ok("\n".join(lines), data)


def _ls_entry(entry: os.DirEntry[str]) -> dict[str, Any]:
    if entry.is_symlink():
        return {"name": entry.name, "type": "link", "size": None, "target": os.readlink(entry)}
    if entry.is_dir():
        return {"name": entry.name, "type": "dir", "size": None}
    try:
        size: int | None = entry.stat().st_size
    except OSError:
        size = None
    return {"name": entry.name, "type": "file", "size": size}


def format_ls_entry(entry: dict[str, Any]) -> str:
    """One listing line: ``name/`` for a dir, ``name  (N bytes)``, ``name -> target``."""
    if entry["type"] == "dir":
        return f"{entry['name']}/"
    if entry["type"] == "link":
        return f"{entry['name']} -> {entry.get('target', '?')}"
    size = "?" if entry.get("size") is None else entry["size"]
    return f"{entry['name']}  ({size} bytes)"


class FileGlob(_FileTool):
    """``file_glob``: workspace paths matching a glob pattern, sorted."""

    name: ClassVar[str] = "file_glob"
    description: ClassVar[str] = (
        "Find workspace paths matching a glob pattern relative to the workspace root, e.g. "
        "`src/**/*.py` (`**` matches any number of folders). Results are sorted."
    )

    class Args(_Args):
        pattern: str = Field(description="Glob pattern relative to the workspace root.")

    def _run(self, args: FileGlob.Args, ctx: ToolContext) -> ToolOutcome:
        root = ctx.workspace.root
        if Path(args.pattern).is_absolute():
            raise _Refusal("invalid_arguments", "pattern must be relative to the workspace root")
        try:
            found = list(root.glob(args.pattern))
        except (ValueError, NotImplementedError) as exc:
            raise _Refusal(
                "invalid_arguments", f"invalid glob pattern {args.pattern!r}: {exc}"
            ) from None
        inside = sorted(
            {
                ctx.workspace.display(p)
                for p in found
                if Path(os.path.realpath(p)).is_relative_to(root)
                and Path(os.path.abspath(p)).is_relative_to(root)
            }
        )
        kept = inside[:GLOB_MAX_RESULTS]
        text = "\n".join(kept) if kept else f"No paths match {args.pattern!r}."
        if len(inside) > len(kept):
            text += f"\n[... {len(inside) - len(kept)} more paths not listed]"
        data = {
            "pattern": args.pattern,
            "count": len(inside),
            "matches": kept,
            "truncated": len(inside) > len(kept),
        }
        return ToolOutcome.ok(text, data)


class FileGrep(_FileTool):
    """``file_grep``: lines matching a Python regular expression, as ``file:line:text``."""

    name: ClassVar[str] = "file_grep"
    description: ClassVar[str] = (
        "Search text files for a Python regular expression, line by line. `path` is a file or "
        "a folder (default: the whole workspace); binary files and .git, node_modules, "
        f"__pycache__ are skipped. Results are `file:line:text`, at most {GREP_MAX_MATCHES}."
    )

    class Args(_Args):
        pattern: str = Field(description="Python regular expression, searched in each line.")
        path: str = Field(".", description="File or folder to search, relative to the workspace.")

    def _run(self, args: FileGrep.Args, ctx: ToolContext) -> ToolOutcome:
        try:
            regex = re.compile(args.pattern)
        except re.error as exc:
            raise _Refusal(
                "invalid_arguments", f"invalid regular expression {args.pattern!r}: {exc}"
            ) from None
        real, shown = _existing(ctx, args.path)
        files = [real] if real.is_file() else _walk(real, ctx.workspace.contains)
        matches, files_hit, truncated = _search(regex, files, ctx.workspace.display)
        if matches:
            text = "\n".join(matches)
            if truncated:
                text += f"\n[search stopped at {GREP_MAX_MATCHES} matches]"
        else:
            text = f"No matches for {args.pattern!r} in {shown}."
        data = {
            "pattern": args.pattern,
            "path": shown,
            "count": len(matches),
            "files": files_hit,
            "matches": matches,
            "truncated": truncated,
        }
        return ToolOutcome.ok(text, data)


def _walk(top: Path, allowed: Callable[[Path], bool]) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(top):
        dirs[:] = [d for d in dirs if d not in GREP_SKIP_DIRS]
        for name in names:
            path = Path(folder, name)
            if allowed(path):
                found.append(path)
    return found


def _search(
    regex: re.Pattern[str], files: list[Path], display: Callable[[Path], str]
) -> tuple[list[str], int, bool]:
    matches: list[str] = []
    files_hit = 0
    for shown, path in sorted((display(p), p) for p in files):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        if b"\0" in raw[:BINARY_SNIFF_BYTES]:
            continue
        hit = False
        for number, line in enumerate(raw.decode("utf-8", errors="replace").split("\n"), 1):
            if not regex.search(line):
                continue
            if len(matches) == GREP_MAX_MATCHES:
                return matches, files_hit, True
            line = line.rstrip("\r")
            if len(line) > GREP_MAX_LINE_CHARS:
                cut = len(line) - GREP_MAX_LINE_CHARS
                line = f"{line[:GREP_MAX_LINE_CHARS]}[... {cut} chars cut]"
            matches.append(f"{shown}:{number}:{line}")
            files_hit += not hit
            hit = True
    return matches, files_hit, False
