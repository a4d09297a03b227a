"""``file_delete`` (R3.1): a high-risk tool made recoverable by a trash folder.

A deleted file is moved, not unlinked: it lands in the session folder's ``trash/`` as
``trash/<n>/<its workspace path>``, so the path it had is recorded by where it lies and
the model (or a person) can read it back and restore it. The file is found through the
same descriptor walk as every file tool (``Workspace.locate``) and renamed relative to
that walk's folder descriptor, so no name is checked first and opened again later.
Folders are refused: one call removes one file, and nothing is removed wholesale.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import ClassVar

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.confine import (
    PathRefused,
    Spot,
    open_regular,
    read_all,
    refuse_hard_link,
)
from contextengine.toolkit.traits import ToolTraits
from contextengine.tools.context import ToolContext
from contextengine.tools.files import FileTool, Refusal, StrictArgs

TRASH_DIR = "trash"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_COPY_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class FileDelete(FileTool["FileDelete.Args"]):
    """``file_delete``: move one file of the workspace to the session's trash."""

    name: ClassVar[str] = "file_delete"
    default: ClassVar[bool] = True
    traits: ClassVar[ToolTraits] = ToolTraits(category="write", risk="high", compressor="other")
    description: ClassVar[str] = "Delete a file (it can be restored from the trash)."

    class Args(StrictArgs):
        path: str

    def _run(self, args: FileDelete.Args, ctx: ToolContext) -> ToolOutcome:
        session = ctx.workspace.session_dir
        if session is None:
            raise Refusal("unavailable", "file_delete needs a session folder to keep its trash")
        with ctx.workspace.locate(args.path, "write") as where:
            if where.real.is_relative_to(session):
                raise Refusal(
                    "reserved_path", f"{where.shown} is in the session folder; it is not deleted"
                )
            try:
                with open_regular(where.spot, where.shown) as (fd, info):
                    # Its trash copy would be a second name of a file that may be outside.
                    refuse_hard_link(info, where.shown)
                    target = _trash_slot(session / TRASH_DIR) / where.shown
                    _move(where.spot, fd, info, target, where.shown)
            except PathRefused as exc:
                if exc.code != "is_a_directory":
                    raise
                raise Refusal(
                    "is_a_directory",
                    f"{where.shown} is a directory; file_delete deletes one file at a time",
                ) from None
        kept = ctx.workspace.display(target)
        ctx.read_mtimes.pop(str(where.real), None)
        data = {"path": where.shown, "trash": kept, "bytes": info.st_size}
        return ToolOutcome.ok(f"Deleted {where.shown}; its content is kept at {kept}.", data)


def _trash_slot(trash: Path) -> Path:
    """A new numbered folder in the trash (``trash/1``, ``trash/2`` ...)."""
    trash.mkdir(parents=True, exist_ok=True)
    taken = [int(entry.name) for entry in trash.iterdir() if entry.name.isdigit()]
    number = max(taken, default=0) + 1
    while True:
        slot = trash / str(number)
        try:
            slot.mkdir()
            return slot
        except FileExistsError:  # another delete took this number meanwhile
            number += 1


def _move(spot: Spot, fd: int, info: os.stat_result, target: Path, shown: str) -> None:
    """Rename the opened file at ``spot`` to ``target``; copy then unlink across devices."""
    target.parent.mkdir(parents=True, exist_ok=True)
    dest = os.open(target.parent, _DIR_FLAGS)
    try:
        try:
            os.rename(spot.name, target.name, src_dir_fd=spot.dir_fd, dst_dir_fd=dest)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            _copy(fd, info, dest, target.name)
            _check_same(spot.name, spot.dir_fd, info, shown)
            os.unlink(spot.name, dir_fd=spot.dir_fd)
            return
        try:
            _check_same(target.name, dest, info, shown)
        except PathRefused:
            # Something was swapped in after the file was opened: put it back untouched.
            os.rename(target.name, spot.name, src_dir_fd=dest, dst_dir_fd=spot.dir_fd)
            raise
    finally:
        os.close(dest)


def _check_same(name: str, dir_fd: int, info: os.stat_result, shown: str) -> None:
    """Refuse when ``name`` is no longer the file that was opened and checked."""
    now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise PathRefused("special_file", f"{shown} was replaced while deleting it; kept as is")


def _copy(fd: int, info: os.stat_result, dest: int, name: str) -> None:
    out = os.open(name, _COPY_FLAGS, stat.S_IMODE(info.st_mode), dir_fd=dest)
    try:
        view = memoryview(read_all(fd))
        while view:
            view = view[os.write(out, view) :]
        os.fsync(out)
    finally:
        os.close(out)
