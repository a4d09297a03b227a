"""Ranking definitions by how the workspace uses them (Aider's repo-map method).

Files are nodes; each use of a name in one file adds an edge to every other file that
defines the name (uses inside the defining file do not count: the map is about what ties
files together). PageRank over that graph (personalised to the files in focus, when there
are any) says which files matter; a file's rank flows out along its edges, and what
reaches a ``(file, name)`` pair is that definition's score. Edge weights favour
distinctive names (long snake_case or CamelCase), names in focus, and uses from files in
focus; they damp private names (``_x``), names defined in many files, and repeated uses
(square root). A use of a name several files define is shared among them (a ``.text``
attribute says little about which ``text`` is meant). Definitions no other file uses come after all used ones, ordered by the
rank of their file.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from contextengine.codemap.tags import FileTags

DAMPING = 0.85
MAX_ITERATIONS = 100
TOLERANCE = 1e-10
FOCUS_NAME_FACTOR = 10.0
DISTINCT_NAME_FACTOR = 10.0
DISTINCT_NAME_CHARS = 8
PRIVATE_FACTOR = 0.1
COMMON_FACTOR = 0.1
COMMON_DEFINERS = 5
FOCUS_FILE_FACTOR = 50.0


@dataclass(frozen=True)
class Edge:
    """``source`` uses ``name``, which ``target`` defines, with this weight."""

    source: str
    target: str
    name: str
    weight: float


@dataclass(frozen=True)
class Ranking:
    """Scored ``(path, name)`` definitions, best first, and every file's PageRank (a
    definition no other file uses scores its file's rank and is listed after the used)."""

    definitions: tuple[tuple[str, str, float], ...]
    files: Mapping[str, float]


def pagerank(
    nodes: Iterable[str],
    edges: Iterable[Edge],
    personalization: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Weighted PageRank by power iteration; ranks sum to 1. Jumps (and the rank of files
    with no out-edges) go to ``personalization`` (normalised), else uniformly."""
    order = sorted(set(nodes))
    if not order:
        return {}
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for edge in edges:
        out[edge.source][edge.target] += edge.weight
    jump = _normalised(personalization or dict.fromkeys(order, 1.0), order)
    rank = dict.fromkeys(order, 1.0 / len(order))
    for _ in range(MAX_ITERATIONS):
        dangling = sum(rank[n] for n in order if not out.get(n))
        nxt = {n: (1 - DAMPING + DAMPING * dangling) * jump[n] for n in order}
        for source, targets in out.items():
            total = sum(targets.values())
            for target, weight in targets.items():
                nxt[target] += DAMPING * rank[source] * weight / total
        change = sum(abs(nxt[n] - rank[n]) for n in order)
        rank = nxt
        if change < TOLERANCE * len(order):
            break
    return rank


def _normalised(weights: Mapping[str, float], order: list[str]) -> dict[str, float]:
    total = sum(weights.get(n, 0.0) for n in order)
    if total <= 0:
        return dict.fromkeys(order, 1.0 / len(order))
    return {n: weights.get(n, 0.0) / total for n in order}


def reference_edges(
    files: Mapping[str, FileTags],
    focus_files: Collection[str] = (),
    focus_names: Collection[str] = (),
) -> list[Edge]:
    """The weighted use -> definition edges between files, in a fixed order."""
    definers: dict[str, set[str]] = defaultdict(set)
    uses: dict[str, Counter[str]] = defaultdict(Counter)
    for path, tags in files.items():
        for definition in tags.definitions:
            definers[definition.name].add(path)
        for name in tags.references:
            uses[name][path] += 1
    edges: list[Edge] = []
    for name in sorted(definers):
        targets = sorted(definers[name])
        factor = _name_factor(name, len(targets), name in focus_names)
        for source, count in sorted(uses[name].items()):
            weight = factor * math.sqrt(count) / len(targets)
            if source in focus_files:
                weight *= FOCUS_FILE_FACTOR
            edges += [Edge(source, t, name, weight) for t in targets if t != source]
    return edges


def _name_factor(name: str, definer_count: int, in_focus: bool) -> float:
    factor = FOCUS_NAME_FACTOR if in_focus else 1.0
    structured = "_" in name.strip("_") or (
        any(c.isupper() for c in name) and any(c.islower() for c in name)
    )
    if structured and len(name) >= DISTINCT_NAME_CHARS:
        factor *= DISTINCT_NAME_FACTOR
    if name.startswith("_"):
        factor *= PRIVATE_FACTOR
    if definer_count > COMMON_DEFINERS:
        factor *= COMMON_FACTOR
    return factor


def rank_definitions(
    files: Mapping[str, FileTags],
    focus_files: Collection[str] = (),
    focus_names: Collection[str] = (),
) -> Ranking:
    """Every defined ``(path, name)`` scored, best first (ties by path, then name)."""
    edges = reference_edges(files, focus_files, focus_names)
    focus = {p: 1.0 for p in focus_files if p in files}
    ranks = pagerank(files, edges, focus or None)
    out_weight: dict[str, float] = defaultdict(float)
    for edge in edges:
        out_weight[edge.source] += edge.weight
    used: dict[tuple[str, str], float] = defaultdict(float)
    for edge in edges:
        used[(edge.target, edge.name)] += ranks[edge.source] * edge.weight / out_weight[edge.source]
    unused = {
        (path, d.name): ranks[path]
        for path, tags in files.items()
        for d in tags.definitions
        if (path, d.name) not in used
    }
    ordered = [
        (path, name, score)
        for group in (used, unused)
        for (path, name), score in sorted(group.items(), key=lambda item: (-item[1], item[0]))
    ]
    return Ranking(tuple(ordered), ranks)
