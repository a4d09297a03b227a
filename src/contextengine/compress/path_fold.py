"""Parallel paths written once (#38): ``locale/{af,ar,de}/LC_MESSAGES`` for three paths.

A listing (``ls -R``, ``find``) of a tree with parallel folders (one per locale, app,
package or test case) repeats the same long path for each, differing in one part. In a
name index that cannot hold every name, those repeats take the room of the names after
them; written once, with the parts that differ in braces (as a shell writes them), every
part of them stays findable (``LC_MESSAGES``, ``locale``, ``af``) and the names after them
get the room.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_FOLDED = 3  # fewer parallel paths than this are listed as they are

_Key = tuple[str, str]  # the path before and after the part that differs


def fold_parallel_paths(names: Sequence[str]) -> list[str]:
    """``names`` with paths that differ only in the folder before their last part folded
    (``head/{a,b,c}/last``), then those that differ only in their last part
    (``head/{x,y,z}``), each group of at least ``MIN_FOLDED`` where its first path stood;
    the other names as they are, in order."""
    return _fold(_fold(names, -2), -1)


def _fold(names: Sequence[str], at: int) -> list[str]:
    """``names`` with the groups of paths that differ only in part ``at`` folded."""
    members: dict[_Key, list[str]] = {}
    keys: list[_Key | None] = []
    for name in names:
        key, part = _parallel_key(name, at)
        keys.append(key)
        if key is not None:
            members.setdefault(key, []).append(part)
    out: list[str] = []
    written: set[_Key] = set()
    for name, key in zip(names, keys, strict=True):
        if key is None or len(members[key]) < MIN_FOLDED:
            out.append(name)
        elif key not in written:
            written.add(key)
            head, tail = key
            out.append(f"{head}/{{{','.join(dict.fromkeys(members[key]))}}}{tail}")
    return out


def _parallel_key(name: str, at: int) -> tuple[_Key | None, str]:
    """(the path around part ``at``, that part), or ``None`` for a name with fewer than
    three parts, or one already folded."""
    parts = name.split("/")
    if len(parts) < 3 or "{" in name or not parts[at] or (at == -1 and name.endswith("/")):
        return None, ""
    tail = "/" + "/".join(parts[at + 1 :]) if at < -1 else ""  # "/" alone: a folder's
    return ("/".join(parts[:at]), tail), parts[at]
