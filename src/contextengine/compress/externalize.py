"""Externalization (R3.2) and recovery (R3.3): large observations live in artifacts.

An observation over its kind's threshold is written, exactly, to a file under the
session's ``artifacts/``; the context keeps a ``compressed_ref`` (seed 001's
RecoverableCompressor) naming that file. ``recover`` reads it back byte for byte, so
nothing compressed is ever unrecoverable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from contextengine.canonical import canonical_json
from contextengine.errors import ContextEngineError
from contextengine.session.durable import write_replacing
from contextengine.toolkit.base import ObservationKind

REF_TYPE = "compressed_ref"
THRESHOLDS: Mapping[ObservationKind, int] = {
    "webpage": 2000,
    "file": 5000,
    "db": 1000,
    "other": 3000,
}
PREVIEW_HEAD_CHARS = 300
PREVIEW_TAIL_CHARS = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class UnrecoverableRef(ContextEngineError):
    """A ``compressed_ref`` that is malformed or whose original text cannot be read back."""


def over_threshold(text: str, kind: ObservationKind) -> bool:
    """Whether ``text`` is longer than the externalization threshold of ``kind``."""
    return len(text) > THRESHOLDS[kind]


def make_preview(text: str) -> str:
    """The head and tail of ``text`` (all of it when short)."""
    if len(text) <= PREVIEW_HEAD_CHARS + PREVIEW_TAIL_CHARS:
        return text
    cut = len(text) - PREVIEW_HEAD_CHARS - PREVIEW_TAIL_CHARS
    return f"{text[:PREVIEW_HEAD_CHARS]}\n[... {cut} chars ...]\n{text[-PREVIEW_TAIL_CHARS:]}"


class CompressedRef(BaseModel):
    """A reference that stands in for a long text: where it is, a preview, its length."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ObservationKind
    path: str | None = None
    url: str | None = None
    query: str | None = None
    title: str = ""
    preview: str = ""
    original_length: int = Field(ge=0)
    recoverable: bool

    @model_validator(mode="after")
    def _has_source(self) -> CompressedRef:
        if self.path is None and self.url is None and self.query is None:
            raise ValueError("a compressed_ref needs a path, url or query")
        return self

    def to_json(self) -> str:
        """Canonical JSON with ``"_type": "compressed_ref"``; unset sources are left out."""
        return canonical_json({"_type": REF_TYPE, **self.model_dump(exclude_none=True)})

    @classmethod
    def from_json(cls, text: str) -> CompressedRef:
        """Parse what ``to_json`` produced; ``UnrecoverableRef`` when it is not a compressed_ref."""
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UnrecoverableRef(f"not a compressed_ref: {exc}") from None
        if not is_compressed_ref(obj):
            raise UnrecoverableRef('not a compressed_ref: no "_type": "compressed_ref"')
        try:
            return cls.model_validate({k: v for k, v in obj.items() if k != "_type"})
        except ValidationError as exc:
            raise UnrecoverableRef(f"invalid compressed_ref: {exc}") from None


def is_compressed_ref(value: Any) -> bool:
    """Whether ``value`` is a parsed compressed_ref object."""
    return isinstance(value, Mapping) and value.get("_type") == REF_TYPE


class Externalizer:
    """Stores texts in a session's artifacts folder and reads them back exactly.

    ``display`` renders an artifact's path the way the model addresses files (relative to
    the workspace), so the model can ``file_read`` a ref's path; ``short``, when given, a
    shorter path the model's file tools also open, for the texts that point at an artifact
    and that every later request reads again (``stub_path``).
    """

    def __init__(
        self,
        artifacts_dir: Path,
        display: Callable[[Path], str],
        short: Callable[[Path], str] | None = None,
    ) -> None:
        self.artifacts_dir = artifacts_dir
        self._display = display
        self._short = short or display

    def path_for(self, name_hint: str) -> Path:
        """The artifact file for ``name_hint``: a deterministic, safe file name."""
        stem = _UNSAFE.sub("_", name_hint).strip("._") or "artifact"
        return self.artifacts_dir / f"{stem[:120]}.txt"

    def display_path(self, name_hint: str) -> str:
        """The path of ``name_hint``'s artifact as the model addresses it (and refs name it)."""
        return self.display(self.path_for(name_hint))

    def display(self, path: Path) -> str:
        """A path as the model addresses it."""
        return self._display(path)

    def stub_path(self, path: Path) -> str:
        """How a text that every later request reads again (a pruning stub, a delta view, a
        compressed observation's pointer) names the artifact at ``path``."""
        return self._short(path)

    def stub_path_for(self, name_hint: str) -> str:
        """``stub_path`` of ``name_hint``'s artifact (saved or not yet)."""
        return self.stub_path(self.path_for(name_hint))

    def session_relative(self, path: Path) -> str:
        """An artifact's path relative to the session folder (``artifacts/<name>``)."""
        return f"{self.artifacts_dir.name}/{path.name}"

    def store(
        self,
        name_hint: str,
        text: str,
        kind: ObservationKind = "other",
        title: str = "",
        *,
        url: str | None = None,
        query: str | None = None,
    ) -> CompressedRef:
        """Write ``text`` exactly (atomically) and return the ref that recovers it."""
        self.save(name_hint, text)
        return CompressedRef(
            type=kind,
            path=self.display_path(name_hint),
            url=url,
            query=query,
            title=title,
            preview=make_preview(text),
            original_length=len(text),
            recoverable=True,
        )

    def save(self, name_hint: str, text: str) -> Path:
        """Write ``text`` exactly, whole or not at all, as ``name_hint``'s artifact."""
        target = self.path_for(name_hint)
        self.artifacts_dir.mkdir(parents=True, exist_ok=True)
        write_replacing(target, text.encode("utf-8"))
        return target

    def recover(self, ref: CompressedRef) -> str:
        """The original text of ``ref``, byte for byte; ``UnrecoverableRef`` if impossible."""
        source = ref.path or ref.url or ref.query
        if not ref.recoverable or ref.path is None:
            raise UnrecoverableRef(f"compressed_ref {source!r} has no saved copy to recover")
        target = self.artifacts_dir / PurePosixPath(ref.path).name
        if self._display(target) != ref.path:
            raise UnrecoverableRef(
                f"compressed_ref path {ref.path!r} is not an artifact in {self.artifacts_dir}"
            )
        try:
            text = target.read_bytes().decode("utf-8")
        except FileNotFoundError:
            raise UnrecoverableRef(f"artifact {ref.path} is missing") from None
        if len(text) != ref.original_length:
            raise UnrecoverableRef(
                f"artifact {ref.path} has {len(text)} chars but its ref says "
                f"{ref.original_length}; it was changed after it was stored"
            )
        return text
