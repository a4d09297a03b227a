"""The code map of one workspace (R17): parsed sources, ranked, rendered to a budget."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from contextengine.codemap.index import SourceIndex
from contextengine.codemap.rank import rank_definitions
from contextengine.codemap.render import fit
from contextengine.codemap.tags import FileTags
from contextengine.toolkit.workspace import PathRefused, Workspace

DEFAULT_TOKENS = 1024


@dataclass(frozen=True)
class CodeMapView:
    """One rendering: the map's text and tokens, what it shows and what it was made from."""

    text: str
    tokens: int
    definitions_shown: int
    definitions_total: int
    files_shown: int
    files_parsed: int
    truncated_walk: bool

    def summary(self) -> str:
        """``12 of 40 definitions in 5 of 9 source files`` (and when the walk was cut)."""
        line = (
            f"{self.definitions_shown} of {self.definitions_total} definitions in "
            f"{self.files_shown} of {self.files_parsed} source files"
        )
        return line + (" (the walk stopped at its file limit)" if self.truncated_walk else "")


@dataclass(frozen=True)
class Focus:
    """What a map centres on: workspace files, and names to favour."""

    files: frozenset[str] = frozenset()
    names: tuple[str, ...] = ()

    @classmethod
    def of(cls, workspace: Workspace, items: Collection[str]) -> Focus:
        """Items naming an existing workspace file are files (as workspace paths); the
        rest are names."""
        files, names = set(), []
        for item in items:
            try:
                real = workspace.resolve(item)
            except (PathRefused, OSError, ValueError):
                real = None
            if real is not None and real.is_file():
                files.add(workspace.display(real))
            else:
                names.append(item)
        return cls(frozenset(files), tuple(names))

    def describe(self) -> str:
        """The focus as one comma-separated line."""
        return ", ".join([*sorted(self.files), *self.names]) or "the whole workspace"


class CodeMap:
    """A workspace's code map; files are re-parsed, and maps ranked again, only when
    files changed."""

    def __init__(self, workspace: Workspace, max_tokens: int = DEFAULT_TOKENS) -> None:
        self.index = SourceIndex(workspace)
        self.max_tokens = max_tokens
        self._views: dict[tuple[object, ...], CodeMapView] = {}
        self._version = -1

    def build(
        self,
        max_tokens: int | None = None,
        focus_files: Collection[str] = (),
        focus_names: Collection[str] = (),
    ) -> CodeMapView:
        """The best-ranked definitions that fit ``max_tokens`` (default: the map's budget),
        personalised to ``focus_files`` (workspace paths) and ``focus_names``."""
        files = self.index.refresh()
        if self.index.version != self._version:
            self._views.clear()
            self._version = self.index.version
        budget = self.max_tokens if max_tokens is None else max_tokens
        key = (budget, frozenset(focus_files), frozenset(focus_names))
        if key not in self._views:
            self._views[key] = self._build(files, budget, key[1], key[2])
        return self._views[key]

    def _build(
        self,
        files: Mapping[str, FileTags],
        budget: int,
        focus_files: frozenset[str],
        focus_names: frozenset[str],
    ) -> CodeMapView:
        ranking = rank_definitions(files, focus_files, focus_names)
        ranked = [(path, name) for path, name, _score in ranking.definitions]
        shown = fit(ranked, files, budget)
        return CodeMapView(
            text=shown.text,
            tokens=shown.tokens,
            definitions_shown=shown.definitions,
            definitions_total=len(ranked),
            files_shown=shown.files,
            files_parsed=len(files),
            truncated_walk=self.index.truncated,
        )
