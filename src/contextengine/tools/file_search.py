"""The file tools (R3.1) that list and search the workspace: ls, glob and grep.

Walks go through ``confine.tree`` from an opened folder: symlinks are listed, never
followed, and the reserved engine and session folders are neither listed nor entered.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from typing import Any, ClassVar

import re2
from pydantic import Field

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.confine import (
    PathRefused,
    Spot,
    existing_kind,
    open_folder,
    open_regular,
    tree,
)
from contextengine.toolkit.text_forms import format_ls_entry
from contextengine.toolkit.traits import ToolTraits
from contextengine.toolkit.workspace import Located
from contextengine.tools.context import ToolContext
from contextengine.tools.file_lines import looks_binary, read_lines
from contextengine.tools.files import (
    FileTool,
    Refusal,
    StrictArgs,
)

LS_MAX_ENTRIES = 1000
GLOB_MAX_RESULTS = 1000
# A glob matches in time linear in pattern x path (no backtracking), its pattern is short,
# and its walk stops with an error observation after this many entries or seconds.
GLOB_MAX_PATTERN_CHARS = 1000
GLOB_MAX_SEGMENTS = 32
GLOB_MAX_ENTRIES = 200_000
GLOB_MAX_SECONDS = 10.0
GREP_MAX_MATCHES = 1000
GREP_MAX_LINE_CHARS = 500
GREP_SKIP_DIRS = frozenset({".git", ".contextengine", "node_modules", "__pycache__"})
# Bounds on the work a model-chosen search can cause: RE2 matches in time linear in the
# line, files are read line by line and bigger ones skipped, and the whole search stops at
# a deadline with an error observation (so a turn, and cancel, wait at most this long).
GREP_MAX_SECONDS = 10.0
GREP_MAX_FILE_BYTES = 32 * 1024 * 1024
GREP_MAX_PROGRAM_BYTES = 8 * 1024 * 1024


@contextmanager
def _open_folder(where: Located) -> Iterator[int]:
    """A descriptor of the folder at ``where``, refusing a file with a hint."""
    try:
        with open_folder(where.spot, where.shown) as fd:
            yield fd
    except PathRefused as exc:
        if exc.code == "not_a_directory":
            hint = f"{where.shown} is not a directory; use file_read"
            raise Refusal("not_a_directory", hint) from None
        raise


class FileLs(FileTool["FileLs.Args"]):
    """``file_ls``: the entries of a directory, sorted, with type and size."""

    name: ClassVar[str] = "file_ls"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="ls")
    description: ClassVar[str] = "List a folder with sizes."

    class Args(StrictArgs):
        path: str = Field(".")

    def _run(self, args: FileLs.Args, ctx: ToolContext) -> ToolOutcome:
        with ctx.workspace.locate(args.path, "read") as where, _open_folder(where) as fd:
            shown = where.shown
            entries = [
                _ls_entry(kind, dir_fd, name)
                for parts, kind, dir_fd, name in tree(fd, where.spot.parts, lambda _: False)
                if not ctx.workspace.hidden(where, parts)
            ]
        entries.sort(key=lambda e: e["name"])
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


def _ls_entry(kind: str, dir_fd: int, name: str) -> dict[str, Any]:
    try:
        if kind == "link":
            return {
                "name": name,
                "type": "link",
                "size": None,
                "target": os.readlink(name, dir_fd=dir_fd),
            }
        if kind == "dir":
            return {"name": name, "type": "dir", "size": None}
        size: int | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_size
    except OSError:
        size = None  # vanished since the listing
    return {"name": name, "type": "file", "size": size}


class FileGlob(FileTool["FileGlob.Args"]):
    """``file_glob``: workspace paths matching a glob pattern, sorted."""

    name: ClassVar[str] = "file_glob"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="glob")
    description: ClassVar[str] = "Paths matching a glob (e.g. src/**/*.py)."

    class Args(StrictArgs):
        pattern: str

    def _run(self, args: FileGlob.Args, ctx: ToolContext) -> ToolOutcome:
        pattern = _glob_parts(args.pattern)
        deadline = time.monotonic() + GLOB_MAX_SECONDS
        inside: list[str] = []
        with ctx.workspace.locate(".", "read") as where:

            def descend(parts: tuple[str, ...]) -> bool:
                return not ctx.workspace.hidden(where, parts) and _could_match(pattern, parts)

            walk = tree(where.spot.dir_fd, (), descend)
            for visited, (parts, _kind, _fd, _name) in enumerate(walk, 1):
                if visited > GLOB_MAX_ENTRIES or time.monotonic() > deadline:
                    return ToolOutcome.fail(
                        "limit_reached",
                        f"file_glob stopped at its budget ({GLOB_MAX_ENTRIES} entries or "
                        f"{GLOB_MAX_SECONDS:g} s) after {len(inside)} matches; "
                        "use a pattern with a fixed leading folder",
                    )
                if not ctx.workspace.hidden(where, parts) and _glob_match(pattern, parts):
                    inside.append("/".join(parts))
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


def _glob_parts(pattern: str) -> tuple[str, ...]:
    """The pattern's components (runs of ``**`` merged); refuses absolute and ``..`` ones."""
    if pattern.startswith("/"):
        raise Refusal("invalid_arguments", "pattern must be relative to the workspace root")
    if len(pattern) > GLOB_MAX_PATTERN_CHARS:
        raise Refusal(
            "invalid_arguments", f"glob pattern is over {GLOB_MAX_PATTERN_CHARS} characters"
        )
    if "\0" in pattern:
        raise Refusal("invalid_arguments", "pattern contains a NUL byte")
    parts: list[str] = []
    for part in pattern.split("/"):
        if part == "..":
            raise Refusal("outside_workspace", f"pattern {pattern!r} leaves the workspace (..)")
        if part not in ("", ".") and not (part == "**" and parts[-1:] == ["**"]):
            parts.append(part)
    if not parts:
        raise Refusal("invalid_arguments", f"invalid glob pattern {pattern!r}: it is empty")
    if len(parts) > GLOB_MAX_SEGMENTS:
        raise Refusal(
            "invalid_arguments",
            f"glob pattern has {len(parts)} components; at most {GLOB_MAX_SEGMENTS} are allowed",
        )
    return tuple(parts)


def _glob_match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether a path's components match the pattern's (``**``: zero or more components)."""
    return len(pattern) in _glob_states(pattern, parts)


def _could_match(pattern: tuple[str, ...], folder: tuple[str, ...]) -> bool:
    """Whether some path below ``folder`` may match (prunes the walk)."""
    return any(at < len(pattern) for at in _glob_states(pattern, folder))


def _glob_states(pattern: tuple[str, ...], parts: tuple[str, ...]) -> set[int]:
    """The pattern positions reachable after matching ``parts``.

    A set of positions advanced one component at a time (an NFA run), so the cost is
    pattern x path whatever the ``**``s; backtracking was exponential in them.
    """
    states = _skip_stars(pattern, {0})
    for name in parts:
        following = set()
        for at in states:
            if at == len(pattern):
                continue
            if pattern[at] == "**":
                following.add(at)
            elif fnmatchcase(name, pattern[at]):
                following.add(at + 1)
        states = _skip_stars(pattern, following)
        if not states:
            break
    return states


def _skip_stars(pattern: tuple[str, ...], states: set[int]) -> set[int]:
    """``states`` plus the positions after any ``**`` matching zero components."""
    closed = set(states)
    for at in sorted(states):
        while at < len(pattern) and pattern[at] == "**":
            at += 1
            closed.add(at)
    return closed


class FileGrep(FileTool["FileGrep.Args"]):
    """``file_grep``: lines matching an RE2 regex (linear time), as ``file:line:text``."""

    name: ClassVar[str] = "file_grep"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="read", compressor="grep")
    description: ClassVar[str] = (
        f"Regex search under path: up to {GREP_MAX_MATCHES} file:line:text lines."
    )

    class Args(StrictArgs):
        pattern: str
        path: str = "."

    def _run(self, args: FileGrep.Args, ctx: ToolContext) -> ToolOutcome:
        search = _Search(compile_linear(args.pattern), time.monotonic() + GREP_MAX_SECONDS)
        with ctx.workspace.locate(args.path, "read") as where:
            shown = where.shown
            info = existing_kind(where.spot)
            if info is None:
                raise Refusal("not_found", f"{shown}: no such file or directory")
            if not stat.S_ISDIR(info.st_mode):
                search.file(where.spot, shown, alone=True)
            else:
                with _open_folder(where) as fd:
                    search.folder(ctx, where, fd)
        if search.out_of_time:
            return ToolOutcome.fail(
                "timeout",
                f"file_grep stopped at its {GREP_MAX_SECONDS:g} s limit after "
                f"{len(search.matches)} matches; search a narrower path or a simpler pattern",
            )
        if search.matches:
            text = "\n".join(search.matches)
            if search.truncated:
                text += f"\n[search stopped at {GREP_MAX_MATCHES} matches]"
        else:
            text = f"No matches for {args.pattern!r} in {shown}."
        if search.skipped:
            text += (
                f"\n[{len(search.skipped)} files over {GREP_MAX_FILE_BYTES} bytes not "
                f"searched: {', '.join(search.skipped[:5])}]"
            )
        data = {
            "pattern": args.pattern,
            "path": shown,
            "count": len(search.matches),
            "files": search.files_hit,
            "matches": search.matches,
            "truncated": search.truncated,
            "skipped": search.skipped,
        }
        return ToolOutcome.ok(text, data)


def compile_linear(pattern: str) -> re2._Regexp:
    """``pattern`` compiled by RE2 (matching in linear time); refused with the reason if not.

    RE2 has no backreferences or lookaround: such a pattern gets a clear error instead.
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = GREP_MAX_PROGRAM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise Refusal(
            "invalid_arguments",
            f"invalid regular expression {pattern!r}: {reason} (file_grep uses RE2 syntax: "
            "no backreferences or lookaround)",
        ) from None


class _Search:
    """The matches of one regex over files met in path order, up to ``GREP_MAX_MATCHES``."""

    def __init__(self, regex: re2._Regexp, deadline: float) -> None:
        self.regex = regex
        self.deadline = deadline
        self.matches: list[str] = []
        self.skipped: list[str] = []
        self.files_hit = 0
        self.truncated = False
        self.out_of_time = False

    def folder(self, ctx: ToolContext, where: Located, fd: int) -> None:
        """Search every regular file below the folder, skipping reserved and noise folders."""

        def descend(parts: tuple[str, ...]) -> bool:
            return parts[-1] not in GREP_SKIP_DIRS and not ctx.workspace.hidden(where, parts)

        root = where.zone.tree.root
        for parts, kind, dir_fd, name in tree(fd, where.spot.parts, descend):
            if kind != "file" or ctx.workspace.hidden(where, parts):
                continue
            try:
                self.file(Spot(dir_fd, name, parts), ctx.workspace.display(root.joinpath(*parts)))
            except (PathRefused, OSError):
                continue  # swapped or vanished since the listing
            if self.truncated or self.out_of_time:
                return
            self.out_of_time = time.monotonic() > self.deadline

    def file(self, spot: Spot, shown: str, alone: bool = False) -> None:
        """Add the matching lines of one regular file, read line by line.

        Binary files are skipped; a file over ``GREP_MAX_FILE_BYTES`` is noted as skipped,
        or refused when it is the one file searched (``alone``).
        """
        with open_regular(spot, shown) as (fd, info):
            if info.st_size > GREP_MAX_FILE_BYTES:
                if alone:
                    raise Refusal(
                        "limit_reached",
                        f"{shown} is {info.st_size} bytes; file_grep searches files up to "
                        f"{GREP_MAX_FILE_BYTES} bytes",
                    )
                self.skipped.append(shown)
                return
            if looks_binary(fd):
                return
            self._lines(fd, shown)

    def _lines(self, fd: int, shown: str) -> None:
        hit = False
        for number, raw in enumerate(read_lines(fd, GREP_MAX_FILE_BYTES), 1):
            if time.monotonic() > self.deadline:
                self.out_of_time = True
                return
            line = raw.head.decode("utf-8", errors="replace")
            if not self.regex.search(line):
                continue
            if len(self.matches) == GREP_MAX_MATCHES:
                self.truncated = True
                return
            line = line.rstrip("\r")
            if len(line) > GREP_MAX_LINE_CHARS:
                cut = len(line) - GREP_MAX_LINE_CHARS
                line = f"{line[:GREP_MAX_LINE_CHARS]}[... {cut} chars cut]"
            self.matches.append(f"{shown}:{number}:{line}")
            self.files_hit += not hit
            hit = True
