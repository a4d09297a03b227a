"""Whole-or-nothing file writes: a temp file beside the target, fsynced, then put in place.

A crash (even ``kill -9``) at any point leaves either the old state or the complete new
file, plus at most a hidden ``.<name>.*.tmp`` file that nothing reads.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FILE_MODE = 0o644
"""Mode of the files written here (a temp file starts private)."""


def write_replacing(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``path`` whole or not at all, replacing any file already there."""
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
