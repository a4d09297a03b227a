"""After a tool ran: what history keeps forever and what the model sees now (R7.2, R3.2).

History gets the per-tool compressed form (or the full text in ``full`` mode); the model's
live view gets the full text, or a ``compressed_ref`` with a preview when the text is over
its kind's threshold. In ``full`` mode an output that repeats most of an earlier result
history shows whole may instead go in as its difference from it (``delta``). Whenever
either is not the full text, the full text is saved to the artifacts first (R3.3). An
error's message is kept verbatim in both (R5.1), or, in a difference from an earlier
failure, in that failure's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contextengine.compress.compressors import compress, tool_category
from contextengine.compress.delta import ShownResult, closest, delta_text
from contextengine.compress.externalize import (
    THRESHOLDS,
    CompressedRef,
    Externalizer,
    over_threshold,
)
from contextengine.compress.path_fold import fold_parallel_paths
from contextengine.compress.topic import common_word, on_topic
from contextengine.toolkit.base import ObservationKind, ToolOutcome
from contextengine.toolkit.classify import error_tail
from contextengine.toolkit.traits import Compressor, ToolTraits
from contextengine.types import HistoryMode

ERROR_TAIL_LINES = 20
ERROR_TAIL_CHARS = 3000  # a saved failure's view keeps at most this much of its tail verbatim
TITLE_CHARS = 120
SAME_FAILURE = "It failed as that result did: its error is there, changed only as shown."
_TITLE_ARGS = ("path", "file_path", "pattern", "command", "url", "query")
MAX_INDEXED_NAMES = 600
# A ref view, its index included, is at most this many times its kind's threshold (the
# index gets the room the ref and an error leave), and a "name" longer than
# NAME_MAX_CHARS is not indexed: no one looks for a 1 MB hex line by name.
REF_VIEW_MAX_THRESHOLDS = 2
NAME_MAX_CHARS = 200
# in full mode, a shortened view (a ref, a difference) longer than this share of the text
# is not used
REF_VIEW_MAX_SHARE = 0.6
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{5,}")
_CODE_LIKE = re.compile(r"[_./\-0-9]|[a-z][A-Z]")
_MORE_ROOM = " (and 99999 more)"
_WORKDIR_ARGS = ("workdir", "cwd", "working_directory", "working_dir", "directory", "dir_path")
_CD = re.compile(r"\s*cd\s+(/[^\s;&|]*)\s*(?:&&|;)")
# a folder path whose first part is no host name (``src/pages/X.tsx``), or a file name
# with an extension (``setup.cfg``); not a URL's ``github.com/...`` nor ``os.path.join``
_RELATIVE_PATH = re.compile(r"(?:[^./]+/[^/]|[\w-]+\.[A-Za-z0-9]{1,5}\.?$)")


@dataclass(frozen=True)
class ProcessedObservation:
    """One observation, decided once when its entry is appended.

    ``history`` is the ``ToolResultEntry.content`` that history renders forever; ``live``
    is what the model sees now, once; ``full_ref`` is the artifact (relative to the session
    folder) holding the full text when ``history`` or ``live`` is not the full text.
    """

    history: str
    live: str
    full_ref: str | None
    original_length: int


class ObservationProcessor:
    """Turns a tool outcome into its history and live forms for one session; ``traits``
    says what each tool (by name) declares, as ``Toolset.traits`` does; ``shown``, the
    earlier results history shows whole (``delta.shown_results``), newest first; ``topic``,
    what the user said (``topic.user_text``)."""

    def __init__(
        self,
        externalizer: Externalizer,
        *,
        mode: HistoryMode,
        externalize: bool,
        traits: Callable[[str], ToolTraits],
        shown: Callable[[], Sequence[ShownResult]] = tuple,
        topic: Callable[[], str] = str,
    ) -> None:
        self._externalizer = externalizer
        self._mode = mode
        self._externalize = externalize
        self._traits = traits
        self._shown = shown
        self._topic = topic
        self._seen: set[str] = set()

    def process(
        self,
        entry_index: int,
        tool_name: str,
        arguments: Mapping[str, Any],
        outcome: ToolOutcome,
    ) -> ProcessedObservation:
        """Compress, externalize and save what needs saving for entry ``entry_index``."""
        full = outcome.text
        name = artifact_name(entry_index, tool_name)
        compressor = self._traits(tool_name).compressor
        kind = observation_kind(tool_name, arguments, outcome, compressor)
        externalized = self._externalize and over_threshold(full, kind)
        saved = False
        if self._mode == "full":
            # the shortest view at most REF_VIEW_MAX_SHARE of the text: the difference from
            # an earlier result, or, over the threshold, a ref with its index
            limit = int(len(full) * REF_VIEW_MAX_SHARE)
            views = [delta] if (delta := self._delta_view(name, outcome)) is not None else []
            if externalized:
                ref = self._store(name, full, kind, tool_name, arguments)
                views.append(self._ref_view(ref, outcome, kind, arguments, limit))
            if views and len(shortest := min(views, key=len)) <= limit:
                history, saved = shortest, True
                if not externalized:
                    self._store(name, full, kind, tool_name, arguments)
            else:
                history = full  # no view, or one about as long as the text: it saves nothing
            live = history
        else:
            where = self._externalizer.stub_path_for(name)
            compressed = compress(
                tool_name, arguments, outcome, full_ref=where, compressor=compressor
            )
            if compressed.cut:
                ref = self._store(name, full, kind, tool_name, arguments)
                saved = True
                history = compressed.text
                if len(history) > REF_VIEW_MAX_THRESHOLDS * THRESHOLDS[kind]:
                    # a per-tool form sized for another kind: the ref is bounded by this one
                    history = self._ref_view(ref, outcome, kind, arguments)
                live = self._ref_view(ref, outcome, kind, arguments) if externalized else full
            elif len(full) > REF_VIEW_MAX_THRESHOLDS * THRESHOLDS[kind]:
                # a form that cuts nothing (a few very long lines): the ref view bounds it
                ref = self._store(name, full, kind, tool_name, arguments)
                saved = True
                history = live = self._ref_view(ref, outcome, kind, arguments)
            else:
                # Nothing to cut: the verbatim text is smaller than its JSON form, and
                # showing it once in history is all the model needs.
                history = live = full
        self._seen.update(names_in(history))
        full_ref = None
        if saved:
            full_ref = self._externalizer.session_relative(self._externalizer.path_for(name))
        return ProcessedObservation(history, live, full_ref, len(full))

    def _ref_view(
        self,
        ref: CompressedRef,
        outcome: ToolOutcome,
        kind: ObservationKind,
        arguments: Mapping[str, Any],
        chars: int | None = None,
    ) -> str:
        """The ref, how to read it, an index of the names the full text holds, and a
        failure's message verbatim, in at most ``chars`` characters (and at most
        ``REF_VIEW_MAX_THRESHOLDS`` times the kind's threshold) where the ref, the
        instruction and the message leave room for the index.

        The index lists the names new to this session (in no observation history holds,
        nor in the preview), so the model knows what the artifact holds without reading it;
        a name that is part of a longer listed one is held by it and not listed again.
        When they do not all fit, a few paths on the user's topic come first (``on_topic``)
        and the other paths that differ in one folder are written once
        (``fold_parallel_paths``). When all of them fit and the call says the folder it ran
        in, relative paths get their absolute form too, as far as the room allows (it holds
        the relative one).
        """
        head = [
            ref.to_json(),
            "Read the full output in parts with file_read (start_line/end_line).",
        ]
        error = _error_block(outcome)
        fresh = [n for n in names_in(outcome.text) if n not in self._seen and n not in ref.preview]
        fresh = maximal(fresh, 4 * MAX_INDEXED_NAMES)
        most = REF_VIEW_MAX_THRESHOLDS * THRESHOLDS[kind]
        room = min(most, most if chars is None else chars)
        room -= len("\n".join([*head, *error])) + 1
        label = "Names in the full output: "
        index = name_list(label, fresh, MAX_INDEXED_NAMES, room)
        if index.endswith(" more)"):
            # not all fit: a few paths on the user's topic first, then the rest with
            # parallel paths written once, which leaves room for the names after them
            front = on_topic(fresh, self._topic())
            moved = set(front)
            fresh = [*front, *fold_parallel_paths([n for n in fresh if n not in moved])]
            index = name_list(label, fresh, MAX_INDEXED_NAMES, room)
        base = working_dir(arguments)
        if base is not None and index and not index.endswith(" more)"):
            # every name fits: the room left gives relative paths their absolute form too
            fresh = absolute_forms(fresh, base, room - len(index) - len(_MORE_ROOM))
            index = name_list(label, fresh, MAX_INDEXED_NAMES, room)
        return "\n".join([*head, *([index] if index else []), *error])

    def _delta_view(self, name: str, outcome: ToolOutcome) -> str | None:
        """The outcome as its difference from the earlier result shown whole that holds
        most of it, and a failure's message verbatim (R5.1); ``None`` without one.

        When that result failed too, its output is in history verbatim, error included,
        and every line that changed is in the difference, so a failed command's output is
        said to be that one's instead of repeated: a test run that fails again the same way
        costs its few changed lines."""
        base = closest(outcome.text, self._shown())
        if base is None:
            return None
        title = _title(base.tool_name, base.call.arguments_or_empty() if base.call else {})
        where = self._externalizer.stub_path_for(name)
        error = _error_block(outcome)
        if error and base.failed:
            error = [SAME_FAILURE]
        return "\n".join([delta_text(base, title, outcome.text, where), *error])

    def _store(
        self,
        name: str,
        text: str,
        kind: ObservationKind,
        tool_name: str,
        arguments: Mapping[str, Any],
    ) -> CompressedRef:
        return self._externalizer.store(
            name,
            text,
            kind,
            _title(tool_name, arguments),
            url=_str_arg(arguments, "url") if kind == "webpage" else None,
            query=_str_arg(arguments, "query") if kind == "db" else None,
        )


def _error_block(outcome: ToolOutcome) -> list[str]:
    """A failure's message, or the tail of its text, verbatim (R5.1); nothing on success."""
    if outcome.status != "error":
        return []
    if outcome.error is not None:
        return [f'<error code="{outcome.error.code}">\n{outcome.error.message}\n</error>']
    tail = error_tail(outcome.text, ERROR_TAIL_LINES, chars=ERROR_TAIL_CHARS)
    return [f"<error>\n{tail}\n</error>"]


def working_dir(arguments: Mapping[str, Any]) -> str | None:
    """The absolute folder a call ran in, when its arguments say: a working-directory
    argument (Codex's ``workdir``, Gemini CLI's ``directory``, ...) or a command that
    starts with ``cd /abs &&`` (a command given as a list is read as its last item)."""
    for key in _WORKDIR_ARGS:
        value = _str_arg(arguments, key)
        if value and value.startswith("/"):
            return value.rstrip("/") or None
    command = arguments.get("command")
    if isinstance(command, list) and command:
        command = command[-1]
    if isinstance(command, str) and (match := _CD.match(command)):
        return match.group(1).rstrip("/") or None
    return None


def absolute_forms(names: Sequence[str], base: str, room: int) -> list[str]:
    """``names`` with relative paths (``src/x.py``, ``setup.cfg``) written under ``base``
    (``/repo/src/x.py``, which holds both forms), in order while ``room`` characters last."""
    inside = base.lstrip("/") + "/"
    out: list[str] = []
    for name in names:
        cost = len(base) + 1
        if cost <= room and _RELATIVE_PATH.match(name) and not name.startswith(inside):
            name = f"{base}/{name}"
            room -= cost
        out.append(name)
    return out


def name_list(label: str, names: Sequence[str], most: int, room: int | None = None) -> str:
    """``label`` and the first of ``names`` (at most ``most``, and within ``room``
    characters when given), saying how many it leaves out; empty when none fits.

    Names hold no spaces, so a space parts them: a comma would add a token to each."""
    budget = None if room is None else room - len(label) - len(_MORE_ROOM)
    shown: list[str] = []
    used = 0
    for name in names[:most]:
        used += len(name) + bool(shown)
        if budget is not None and used > budget:
            break
        shown.append(name)
    if not shown:
        return ""
    more = f" (and {len(names) - len(shown)} more)" if len(names) > len(shown) else ""
    return f"{label}{' '.join(shown)}{more}"


def artifact_name(entry_index: int, tool_name: str) -> str:
    """The artifact name hint of the tool result recorded as entry ``entry_index``."""
    return f"{entry_index}-{tool_name}"


def observation_kind(
    tool_name: str,
    arguments: Mapping[str, Any],
    outcome: ToolOutcome,
    compressor: Compressor | None = None,
) -> ObservationKind:
    """The outcome's kind; a file-reading tool's text counts as ``file`` (``compressor``:
    what the tool declares; another harness's tool is known by its name)."""
    if outcome.kind == "other" and (compressor or tool_category(tool_name, arguments)) == "read":
        return "file"
    return outcome.kind


def names_in(text: str) -> list[str]:
    """The names of 6+ characters a reader may look for in ``text``: first those that look
    like code (paths, dotted names, snake_case, kebab-case, CamelCase, names with digits),
    then the words that are not common English (``getattr``, ``tokenizer``, a product's
    name), then the common ones (an agent quotes a document's own words), each in order of
    appearance. A name keeps a folder's slash and a sentence's full stop as the text has
    them (a reply quoting a word at the end of its sentence looks for ``tests.``; the form
    with the stop holds the one without), but the stop does not make a word look like code.
    Runs longer than ``NAME_MAX_CHARS`` (hex dumps, base64) are not names."""
    code: dict[str, None] = {}
    rare: dict[str, None] = {}
    common: dict[str, None] = {}
    for match in _NAME.finditer(text):
        # a trailing "/" stays: a folder or a URL is looked for as written ("docs/")
        name = match.group(0).rstrip(".-")
        if not 6 <= len(name) <= NAME_MAX_CHARS:
            continue
        listed = match.group(0)  # as written, stop included
        if _CODE_LIKE.search(name):
            code.setdefault(listed, None)
        elif common_word(name):
            common.setdefault(listed, None)
        else:
            rare.setdefault(listed, None)
    return [*code, *rare, *common]


def maximal(names: Sequence[str], window: int) -> list[str]:
    """``names`` without those that are part of another among the first ``window`` (a
    list holding the longer holds both), the rest as they are."""
    head = names[:window]
    joined = "\n".join(head)  # a name inside another occurs in it twice
    return [n for n in head if joined.count(n) == 1] + list(names[window:])


def _str_arg(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    return value if isinstance(value, str) else None


def _title(tool_name: str, arguments: Mapping[str, Any]) -> str:
    for key in _TITLE_ARGS:
        value = _str_arg(arguments, key)
        if value:
            return f"{tool_name} {value}"[:TITLE_CHARS]
    return tool_name
