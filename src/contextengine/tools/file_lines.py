"""Streaming reads of an open file: lines and line counts in bounded memory.

The file tools read what a model may have made itself (a 1 GB file, one 1 GB line), so
nothing here holds more than one chunk plus one capped line at a time.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from dataclasses import dataclass

CHUNK_BYTES = 1 << 20
BINARY_SNIFF_BYTES = 8192


def looks_binary(fd: int) -> bool:
    """Whether the file has a NUL in its first bytes (read only those)."""
    return b"\0" in os.pread(fd, BINARY_SNIFF_BYTES, 0)


@dataclass(frozen=True)
class Line:
    """One line without its ``\\n``: its first bytes (up to the reader's cap) and its length."""

    head: bytes
    length: int
    ended: bool = True

    @property
    def cut(self) -> int:
        """How many bytes of the line are not in ``head``."""
        return self.length - len(self.head)


def read_lines(fd: int, max_line_bytes: int, max_bytes: int | None = None) -> Iterator[Line]:
    """The lines of ``fd``, split on ``\\n`` like ``split_lines``.

    A line longer than ``max_line_bytes`` keeps only its head; the rest is counted, not kept.
    Reading stops after ``max_bytes``: a line still open there comes with ``ended`` false.
    """
    head, length, offset = b"", 0, 0
    while chunk := os.pread(fd, CHUNK_BYTES, offset):
        if max_bytes is not None and offset >= max_bytes:
            yield Line(head, length, ended=False)
            return
        offset += len(chunk)
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            yield Line(_extend(head, piece, max_line_bytes), length + len(piece))
            head, length = b"", 0
        head = _extend(head, pieces[-1], max_line_bytes)
        length += len(pieces[-1])
    if length:
        yield Line(head, length)


def _extend(head: bytes, piece: bytes, cap: int) -> bytes:
    return head + piece[: cap - len(head)] if len(head) < cap else head


def count_lines(fd: int) -> int:
    """The number of lines ``read_lines`` would yield, counted chunk by chunk."""
    count, offset, last = 0, 0, b"\n"
    while chunk := os.pread(fd, CHUNK_BYTES, offset):
        offset += len(chunk)
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


def decode_head(line: Line) -> str:
    """The line's head as UTF-8 text; a cut line may end inside a character (dropped).

    Raises ``UnicodeDecodeError`` for bytes that are not UTF-8.
    """
    if not line.cut:
        return line.head.decode("utf-8")
    return codecs.getincrementaldecoder("utf-8")().decode(line.head, final=False)
