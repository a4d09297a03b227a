"""The code map as text, sized to a token budget.

Files are listed by path; under each, the source lines of its chosen definitions with
their line numbers, plus the lines of the definitions around them (a method's class), so
a name is read in its scope. The budget is met by taking the longest prefix of the
ranking whose rendering fits (a binary search over the prefix length).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contextengine.codemap.tags import Definition, FileTags
from contextengine.context.tokens import shared_counter


@dataclass(frozen=True)
class RenderedMap:
    """A rendered map: its text, its tokens, and how many definitions and files it shows."""

    text: str
    tokens: int
    definitions: int
    files: int


def render(ranked: Sequence[tuple[str, str]], files: Mapping[str, FileTags]) -> str:
    """The map of the ranked ``(path, name)`` definitions (all of them)."""
    chosen: dict[str, set[str]] = defaultdict(set)
    for path, name in ranked:
        chosen[path].add(name)
    blocks = []
    for path in sorted(chosen):
        definitions = files[path].definitions
        rows = {d.line for d in definitions if d.name in chosen[path]}
        rows |= {
            outer.line
            for d in definitions
            if d.line in rows
            for outer in definitions
            if outer.first < d.line <= outer.last
        }
        shown = sorted({d.line: d for d in definitions if d.line in rows}.values(), key=_line)
        blocks.append(f"{path}:\n" + "\n".join(f"{d.line + 1:>5}│{d.text}" for d in shown))
    return "\n".join(blocks)


def _line(definition: Definition) -> int:
    return definition.line


def fit(
    ranked: Sequence[tuple[str, str]], files: Mapping[str, FileTags], max_tokens: int
) -> RenderedMap:
    """The map of the longest prefix of ``ranked`` that fits in ``max_tokens``."""
    low, high = 0, len(ranked)
    best = RenderedMap("", 0, 0, 0)
    while low <= high:
        middle = (low + high) // 2
        text = render(ranked[:middle], files)
        tokens = shared_counter().count_uncached(text) if text else 0
        if tokens <= max_tokens:
            shown_files = len({path for path, _ in ranked[:middle]})
            best = RenderedMap(text, tokens, middle, shown_files)
            low = middle + 1
        else:
            high = middle - 1
    return best
