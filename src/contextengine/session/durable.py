"""Whole-or-nothing file writes: a temp file beside the target, fsynced, then put in place.

A crash (even ``kill -9``) at any point leaves either the old state or the complete new
file, plus at most a hidden ``.<name>.*.tmp`` file that nothing reads. A disk that refuses
the bytes (full, over quota, read-only, over the process's file size limit) is a
``DiskError`` naming the file, whichever writer met it (``disk_errors``).
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contextengine.errors import DiskError

FILE_MODE = 0o644
"""Mode of the files written here (a temp file starts private)."""

DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO})
"""What a disk answers when it cannot take more bytes: no space, quota, read-only, the
process's file size limit (RLIMIT_FSIZE), an I/O error."""


@contextmanager
def disk_errors(path: Path) -> Iterator[None]:
    """A disk that refuses writes to ``path`` inside becomes a ``DiskError`` naming it."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in DISK_ERRNOS:
            raise
        raise DiskError(f"{path}: cannot write ({os.strerror(exc.errno)})") from None


def write_replacing(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``path`` whole or not at all, replacing any file already there."""
    with disk_errors(path):
        _replace(path, data, durable)


def _replace(path: Path, data: bytes, durable: bool) -> None:
    temp = _write_temp(path, data, durable)
    try:
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_directory(path.parent)


def create_exclusive(path: Path, data: bytes, durable: bool = True) -> None:
    """Create ``path`` holding ``data`` whole or not at all; ``FileExistsError`` if it exists.

    A hard link puts the complete temp file in place and, unlike a rename, never
    replaces a file another writer put there first.
    """
    with disk_errors(path):
        _create(path, data, durable)


def _create(path: Path, data: bytes, durable: bool) -> None:
    temp = _write_temp(path, data, durable)
    try:
        os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    if durable:
        _fsync_directory(path.parent)


def _write_temp(path: Path, data: bytes, durable: bool) -> Path:
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    temp = Path(name)
    try:
        try:
            os.fchmod(fd, FILE_MODE)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
