"""No history entry outgrows its kind's externalization threshold, whatever the output.

A model can make a tool print anything: a 1 MB hex line, thousands of long distinct
"names", a flood of base64. The history form (and the live view) of such an output must
stay within ``REF_VIEW_MAX_THRESHOLDS`` times its kind's threshold, plus, for a failure,
its error block (kept verbatim, R5.1), or the next request overflows before compaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine.compress.externalize import THRESHOLDS, Externalizer
from contextengine.compress.observation import (
    ERROR_TAIL_CHARS,
    NAME_MAX_CHARS,
    REF_VIEW_MAX_THRESHOLDS,
    ObservationProcessor,
    names_in,
)
from contextengine.toolkit.base import ObservationKind, ToolError, ToolOutcome
from contextengine.tools.registry import default_toolset

TOOLS: dict[ObservationKind, str] = {
    "other": "shell",
    "file": "file_read",
    "webpage": "web_fetch",
    "db": "db_query",
}
MODES = ["full", "compressed", "round_scratchpad"]
PARAMETRIZED_MODES = ["full", "compressed"]  # round_scratchpad stores as compressed does


def processor(tmp_path: Path, mode: str) -> ObservationProcessor:
    externalizer = Externalizer(tmp_path / "artifacts", str)
    return ObservationProcessor(
        externalizer,
        mode=mode,  # type: ignore[arg-type]
        externalize=True,
        traits=default_toolset().traits,
    )


def check(
    tmp_path: Path,
    mode: str,
    kind: ObservationKind,
    outcome: ToolOutcome,
    arguments: dict[str, str] | None = None,
) -> None:
    obs = processor(tmp_path, mode).process(7, TOOLS[kind], arguments or {"command": "x"}, outcome)
    bound = REF_VIEW_MAX_THRESHOLDS * THRESHOLDS[kind]
    if outcome.status == "error":
        bound += 2 * ERROR_TAIL_CHARS
    assert len(obs.history) <= bound, (mode, kind, len(obs.history))
    assert len(obs.live) <= max(bound, len(outcome.text) if mode != "full" else 0)


def hostile_outputs() -> dict[str, str]:
    return {
        "hex line": "9f" * 500_000,
        "base64 lines": "\n".join("QUJD" * 19 + "==" for _ in range(5000)),
        "long names": " ".join(f"pkg_{i:05d}." + "x" * 150 for i in range(1000)),
        "names at the cap": " ".join(
            f"m{i:05d}_" + "y" * (NAME_MAX_CHARS - 7) for i in range(1000)
        ),
        "many short names": " ".join(f"mod_{i}.fn_{i}" for i in range(20_000)),
        "one long path": "/" + "/".join(f"dir_{i}" for i in range(10_000)),
        "a few long lines": "\n".join(f"{i}.py " + "=+" * 375 for i in range(8)),
    }


@pytest.mark.parametrize("mode", PARAMETRIZED_MODES)
@pytest.mark.parametrize("kind", list(TOOLS))
@pytest.mark.parametrize("name", list(hostile_outputs()))
def test_hostile_outputs_stay_within_twice_the_threshold(
    tmp_path: Path, mode: str, kind: ObservationKind, name: str
) -> None:
    text = hostile_outputs()[name]
    check(tmp_path, mode, kind, ToolOutcome.ok(text, kind=kind))
    failed = ToolOutcome("error", text, error=ToolError("nonzero_exit", "exit 1"), kind=kind)
    check(tmp_path / "e", mode, kind, failed)


def test_a_name_longer_than_the_cap_is_not_indexed() -> None:
    assert names_in("a" * (NAME_MAX_CHARS + 1)) == []
    assert names_in("b" * NAME_MAX_CHARS) == ["b" * NAME_MAX_CHARS]


_NAME_CHARS = st.sampled_from("abcdefXYZ0123456789_./-")
_WORDS = st.text(_NAME_CHARS, min_size=1, max_size=400)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(_WORDS, min_size=1, max_size=400),
    separator=st.sampled_from([" ", "\n", ", ", ""]),
    kind=st.sampled_from(list(TOOLS)),
    mode=st.sampled_from(MODES),
    failed=st.booleans(),
)
def test_any_output_stays_within_twice_the_threshold(
    tmp_path_factory: pytest.TempPathFactory,
    words: list[str],
    separator: str,
    kind: ObservationKind,
    mode: str,
    failed: bool,
) -> None:
    text = separator.join(words) * 3
    outcome = ToolOutcome("error", text, kind=kind) if failed else ToolOutcome.ok(text, kind=kind)
    check(tmp_path_factory.mktemp("p"), mode, kind, outcome)


_SEGMENT = st.text(st.sampled_from("abcXYZ019_-"), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.lists(_SEGMENT, min_size=1, max_size=12),
    paths=st.lists(st.lists(_SEGMENT, min_size=1, max_size=6), min_size=1, max_size=300),
    filler=st.integers(0, 400),
    kind=st.sampled_from(list(TOOLS)),
    mode=st.sampled_from(MODES),
)
def test_absolute_forms_keep_an_entry_within_twice_the_threshold(
    tmp_path_factory: pytest.TempPathFactory,
    base: list[str],
    paths: list[list[str]],
    filler: int,
    kind: ObservationKind,
    mode: str,
) -> None:
    """Relative paths under a known working folder get their absolute form only in the
    room the index leaves: however long the folder, the entry stays within its bound."""
    lines = ["/".join(p) + ".py" for p in paths]
    text = "\n".join(line + " " + "=+" * filler for line in lines) * 2
    workdir = "/" + "/".join(base)
    outcome = ToolOutcome.ok(text, kind=kind)
    check(tmp_path_factory.mktemp("p"), mode, kind, outcome, {"workdir": workdir})
