"""Race-free confinement: every file operation walks from a descriptor, never by name.

A path is opened one component at a time (``os.open(..., dir_fd=...)`` with
``O_NOFOLLOW | O_DIRECTORY``) starting from a descriptor of the confining root, so a
folder swapped for a symlink between a check and an open cannot redirect the open. A
symlink met on the way is either refused, or resolved *within* the root: its target is
walked the same way, ``..`` never climbs above the root and an absolute target must name
a path under the root. Files are opened ``O_NONBLOCK`` and checked with ``fstat``, so a
FIFO or device is refused instead of hanging a read. Writes go to a temporary file in the
same opened folder and are renamed over the target relative to that folder's descriptor.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from contextengine.errors import WorkspaceError

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
MAX_SYMLINKS = 40
MAX_WALK_DEPTH = 200

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

RefusalCode = Literal[
    "outside_workspace",
    "not_found",
    "not_a_directory",
    "is_a_directory",
    "reserved_path",
    "special_file",
    "hard_link",
    "symlink",
    "invalid_path",
]
EntryKind = Literal["dir", "file", "link", "other"]
MkdirGuard = Callable[[tuple[str, ...]], None]


class PathRefused(WorkspaceError):
    """A path the confinement will not open; ``code`` is what a tool reports."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class OutsideWorkspace(PathRefused):
    """A path that leads outside the confining root (``..``, absolute, or a symlink)."""

    def __init__(self, path: str, label: str) -> None:
        super().__init__("outside_workspace", f"path {path!r} is outside {label}")
        self.path = path


@dataclass(frozen=True)
class Spot:
    """Where a walk ended: an open folder descriptor and the final name in it.

    ``name`` is ``""`` when the path names that folder itself; ``parts`` is the path below
    the root with every symlink resolved (what reservations are checked against).
    """

    dir_fd: int
    name: str
    parts: tuple[str, ...]


def split_path(path: str) -> tuple[bool, list[str]]:
    """``(is absolute, components)`` of ``path``; refuses NUL bytes and over-long paths."""
    if "\0" in path:
        raise PathRefused("invalid_path", f"path {path[:200]!r} contains a NUL byte")
    try:
        size = len(os.fsencode(path))
    except UnicodeEncodeError:
        raise PathRefused("invalid_path", f"path {path[:200]!r} is not valid Unicode") from None
    if size > MAX_PATH_BYTES:
        raise PathRefused("invalid_path", f"path is longer than {MAX_PATH_BYTES} bytes")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    for part in parts:
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise PathRefused("invalid_path", f"a path component is over {MAX_NAME_BYTES} bytes")
    return path.startswith("/"), parts


class ConfinedRoot:
    """A folder whose descendants are opened only through descriptors walked from it.

    ``follow_symlinks``: resolve symlinks within the root (tools), or refuse every
    symlink component (the server). ``label`` names the root in refusal messages.
    """

    def __init__(self, root: Path, label: str, follow_symlinks: bool = True) -> None:
        self.root = Path(os.path.realpath(root))
        self.label = label
        self.follow_symlinks = follow_symlinks

    def below(self, absolute: str) -> list[str] | None:
        """The components of an absolute path below the root, or ``None`` when not under it."""
        _, parts = split_path(absolute)
        root = self.root.parts[1:]
        if tuple(parts[: len(root)]) != root:
            return None
        return parts[len(root) :]

    @contextmanager
    def locate(
        self, path: str, parts: list[str], mkdir: MkdirGuard | None = None
    ) -> Iterator[Spot]:
        """Walk ``parts`` from the root; ``path`` is what refusals quote.

        With ``mkdir``, missing folders on the way are created, each after ``mkdir(parts)``
        (which raises to forbid it).
        """
        fds = [os.open(self.root, _DIR_FLAGS)]
        try:
            yield self._walk(path, parts, fds, mkdir)
        finally:
            for fd in fds:
                os.close(fd)

    def _walk(self, path: str, parts: list[str], fds: list[int], mkdir: MkdirGuard | None) -> Spot:
        names: list[str] = []
        pending = list(reversed(parts))
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not names:
                    raise self._outside(path)
                os.close(fds.pop())
                names.pop()
                continue
            if not pending:
                target = _link_target(fds[-1], part)
                if target is None:
                    return Spot(fds[-1], part, (*names, part))
            else:
                opened = self._open_dir(path, fds[-1], (*names, part), mkdir)
                if isinstance(opened, int):
                    fds.append(opened)
                    names.append(part)
                    continue
                if opened is None:
                    pending.append(part)  # created just now: open it on the next turn
                    continue
                target = opened
            hops += 1
            if not self.follow_symlinks:
                raise PathRefused("symlink", f"path {path!r} goes through a symlink ({part})")
            if hops > MAX_SYMLINKS:
                raise PathRefused("invalid_path", f"path {path!r} has too many levels of symlinks")
            if target.startswith("/"):
                inside = self.below(target)
                if inside is None:
                    raise self._outside(path)
                for fd in fds[1:]:
                    os.close(fd)
                del fds[1:]
                names.clear()
                target_parts = inside
            else:
                target_parts = target.split("/")
            pending.extend(reversed(target_parts))
        return Spot(fds[-1], "", tuple(names))

    def _open_dir(
        self, path: str, dir_fd: int, parts: tuple[str, ...], mkdir: MkdirGuard | None
    ) -> int | str | None:
        """The folder's descriptor, a symlink's target, or ``None`` after creating it."""
        name = parts[-1]
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if mkdir is None:
                raise PathRefused("not_found", f"{path}: no such file or directory") from None
            mkdir(parts)
            # Made by someone else meanwhile: the retry opens whatever it is.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=dir_fd)
            return None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
        target = _link_target(dir_fd, name)
        if target is None:
            raise PathRefused("not_a_directory", f"{path}: {name} is not a directory")
        return target

    def _outside(self, path: str) -> OutsideWorkspace:
        return OutsideWorkspace(path, self.label)


def _link_target(dir_fd: int, name: str) -> str | None:
    """The target of the symlink ``name`` in the folder, or ``None`` when it is no symlink."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return None
        raise


def existing_kind(spot: Spot) -> os.stat_result | None:
    """The entry's own ``lstat``, or ``None`` when there is nothing at the spot's name."""
    try:
        return os.stat(spot.name or ".", dir_fd=spot.dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextmanager
def open_regular(spot: Spot, shown: str) -> Iterator[tuple[int, os.stat_result]]:
    """A read descriptor of the regular file at ``spot`` and its ``fstat``; else refused."""
    before = existing_kind(spot)
    if before is None:
        raise PathRefused("not_found", f"{shown}: no such file or directory")
    _refuse_non_regular(before, shown)
    try:
        fd = os.open(spot.name, _READ_FLAGS, dir_fd=spot.dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused("symlink", f"{shown} became a symlink while opening it") from None
        raise
    try:
        after = os.fstat(fd)
        _refuse_non_regular(after, shown)
        yield fd, after
    finally:
        os.close(fd)


def _refuse_non_regular(info: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise PathRefused("is_a_directory", f"{shown} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise PathRefused(
            "special_file", f"{shown} is not a regular file (a FIFO, socket, device or link)"
        )


def refuse_hard_link(info: os.stat_result, shown: str) -> None:
    """Refuse a file with other hard links: one of them may be a file outside the root."""
    if info.st_nlink > 1:
        raise PathRefused(
            "hard_link",
            f"{shown} has {info.st_nlink} hard links (one may be outside the workspace); "
            "it is not written through",
        )


def read_all(fd: int, limit: int | None = None) -> bytes:
    """Every byte readable from ``fd`` (at most ``limit`` when given)."""
    chunks, size = [], 0
    while limit is None or size < limit:
        want = 1 << 20 if limit is None else min(1 << 20, limit - size)
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


@contextmanager
def open_folder(spot: Spot, shown: str) -> Iterator[int]:
    """A descriptor of the folder at ``spot`` (no-follow); refused for anything else."""
    if not spot.name:
        yield spot.dir_fd
        return
    try:
        fd = os.open(spot.name, _DIR_FLAGS, dir_fd=spot.dir_fd)
    except FileNotFoundError:
        raise PathRefused("not_found", f"{shown}: no such file or directory") from None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            raise PathRefused("not_a_directory", f"{shown} is not a directory") from None
        if exc.errno == errno.ELOOP:
            raise PathRefused("symlink", f"{shown} is a symlink") from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def replace_file(spot: Spot, shown: str, data: bytes) -> tuple[bool, os.stat_result]:
    """Atomically create or replace the regular file at ``spot``; ``(existed, new stat)``.

    The new content goes to a temporary file in the same opened folder, which is renamed
    over the name relative to that folder's descriptor: a symlink or hard link at the
    name is replaced, never written through. An existing file keeps its permissions.
    """
    if not spot.name:
        raise PathRefused("is_a_directory", f"{shown} is a directory; give a file path")
    before = existing_kind(spot)
    if before is not None:
        _refuse_non_regular(before, shown)
        refuse_hard_link(before, shown)
    temp = f".{spot.name[:200]}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=spot.dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if before is not None:
            os.fchmod(fd, stat.S_IMODE(before.st_mode))
        os.replace(temp, spot.name, src_dir_fd=spot.dir_fd, dst_dir_fd=spot.dir_fd)
        return before is not None, os.fstat(fd)
    except BaseException:
        with contextlib.suppress(OSError):  # already renamed into place
            os.unlink(temp, dir_fd=spot.dir_fd)
        raise
    finally:
        os.close(fd)


def tree(
    dir_fd: int, prefix: tuple[str, ...], descend: Callable[[tuple[str, ...]], bool]
) -> Iterator[tuple[tuple[str, ...], EntryKind, int, str]]:
    """Every entry below a folder descriptor: ``(parts, kind, folder fd, name)``.

    Entries come in the order of their full paths (a folder sorts as ``name/``). Real
    folders for which ``descend(parts)`` holds are entered through no-follow opens;
    symlinks are reported, never followed. The folder fd is valid during the yield only.
    """
    with os.scandir(dir_fd) as scan:
        entries = sorted(
            ((e.name, _kind(e)) for e in scan),
            key=lambda item: item[0] + "/" if item[1] == "dir" else item[0],
        )
    for name, kind in entries:
        parts = (*prefix, name)
        yield parts, kind, dir_fd, name
        if kind != "dir" or len(parts) > MAX_WALK_DEPTH or not descend(parts):
            continue
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError:
            continue  # vanished or swapped for a symlink since the listing
        try:
            yield from tree(sub, parts, descend)
        finally:
            os.close(sub)


def _kind(entry: os.DirEntry[str]) -> EntryKind:
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        if entry.is_file(follow_symlinks=False):
            return "file"
    except OSError:
        pass  # vanished since the listing
    return "other"
