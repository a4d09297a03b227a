"""Hostile arguments a model can choose for the file tools: regexes, globs and file sizes.

Each case must finish within the tool's documented limit (seconds) and, for big files, keep
the process's peak RSS within a bound far below the file's size: a catastrophic regex,
an exponential glob or a 1 GB file the model made must not freeze or exhaust the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools import file_search
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

pytestmark = pytest.mark.timeout(60)

Run = Callable[..., ToolOutcome]


@pytest.fixture
def run(root: Path) -> Run:
    toolset, ctx = default_toolset(), ToolContext(Workspace(root))

    def call(name: str, **arguments: Any) -> ToolOutcome:
        return toolset.execute(ToolCall("c1", name, json.dumps(arguments)), ctx)

    return call


def within(seconds: float, call: Callable[[], ToolOutcome]) -> ToolOutcome:
    """The call's outcome; fails the test if it takes longer than ``seconds``.

    A daemon thread, so a call that never returns (the old backtracking engines) fails
    the test instead of hanging the suite.
    """
    box: list[ToolOutcome] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"the tool call was still running after {seconds} s"
    return box[0]


# --- file_grep ---------------------------------------------------------------

CATASTROPHIC = [
    ("(a+)+$", "a" * 40 + "!"),
    ("(a|aa)*c", "a" * 60),
    ("(x+x+)+y", "x" * 5000),
    ("^(\\w+\\s?)*$", "word " * 20 + "!"),
    ("(.*a){25}", "a" * 30 + "b" * 5000),
]


@pytest.mark.parametrize(("pattern", "line"), CATASTROPHIC)
def test_grep_catastrophic_patterns_return_promptly(
    root: Path, run: Run, pattern: str, line: str
) -> None:
    (root / "evil.txt").write_text(f"{line}\n" * 20)
    out = within(5, lambda: run("file_grep", pattern=pattern))
    assert out.status == "success", out.text


def test_grep_still_finds_what_a_linear_engine_can_match(root: Path, run: Run) -> None:
    (root / "a.py").write_text("def foo_bar(x):\n    return x\nclass Foo:\n")
    out = run("file_grep", pattern=r"^(def|class)\s+\w+")
    assert out.data["matches"] == ["a.py:1:def foo_bar(x):", "a.py:3:class Foo:"]


@pytest.mark.parametrize("pattern", [r"(a)\1", r"foo(?=bar)", r"(?<!x)y", r"(?P<n>a)(?P=n)"])
def test_grep_refuses_what_re2_cannot_do_with_a_clear_error(run: Run, pattern: str) -> None:
    out = run("file_grep", pattern=pattern)
    assert out.error is not None and out.error.code == "invalid_arguments"
    assert "RE2" in out.error.message and "backreferences or lookaround" in out.error.message


def test_grep_refuses_a_pattern_too_big_to_compile(run: Run) -> None:
    out = run("file_grep", pattern="((((a{100}){100}){100}){100})")
    assert out.error is not None and out.error.code == "invalid_arguments"


def test_a_long_grep_stops_at_its_time_limit(
    root: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(50):
        (root / f"f{index}.txt").write_text("needle\n" * 200)
    monkeypatch.setattr(file_search, "GREP_MAX_SECONDS", 0.0)
    out = run("file_grep", pattern="needle")
    assert out.error is not None and out.error.code == "timeout"
    assert "0 s limit" in out.error.message


def test_grep_skips_big_files_in_folders_and_refuses_one_named(
    root: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_search, "GREP_MAX_FILE_BYTES", 1000)
    (root / "big.txt").write_text("needle\n" * 1000)
    (root / "small.txt").write_text("needle\n")
    out = run("file_grep", pattern="needle")
    assert out.data["matches"] == ["small.txt:1:needle"]
    assert out.data["skipped"] == ["big.txt"]
    assert "1 files over 1000 bytes not searched: big.txt" in out.text
    alone = run("file_grep", pattern="needle", path="big.txt")
    assert alone.error is not None and alone.error.code == "limit_reached"


# --- file_glob ---------------------------------------------------------------


def deep_folder(root: Path, depth: int) -> Path:
    folder = root.joinpath(*[f"d{level}" for level in range(depth)])
    folder.mkdir(parents=True)
    (folder / "zzz").write_text("")
    return folder


@pytest.mark.parametrize(
    "pattern",
    [
        "**/*/" * 15 + "zzz",
        "**/d*/" * 15 + "nothing",
        "**/*/**/" * 10 + "zz?",
        "*/**/" * 15 + "**/**/zzz",
    ],
)
def test_glob_cannot_explode_under_a_deep_folder(root: Path, run: Run, pattern: str) -> None:
    deep_folder(root, 60)
    started = time.monotonic()
    out = within(file_search.GLOB_MAX_SECONDS + 2, lambda: run("file_glob", pattern=pattern))
    assert out.status == "success", out.text
    assert time.monotonic() - started < file_search.GLOB_MAX_SECONDS
    zzz = "/".join(f"d{level}" for level in range(60)) + "/zzz"
    assert (zzz in out.data["matches"]) == pattern.endswith(("zzz", "zz?"))


def test_glob_double_stars_keep_their_meaning(root: Path, run: Run) -> None:
    for path in ["a.py", "x/b.py", "x/y/c.py", "x/y/z/d.txt"]:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("")
    assert run("file_glob", pattern="**/*.py").data["matches"] == ["a.py", "x/b.py", "x/y/c.py"]
    assert run("file_glob", pattern="x/**/*.py").data["matches"] == ["x/b.py", "x/y/c.py"]
    assert run("file_glob", pattern="**/y/**").data["matches"] == [
        "x/y",
        "x/y/c.py",
        "x/y/z",
        "x/y/z/d.txt",
    ]
    assert run("file_glob", pattern="*/*/**/*.txt").data["matches"] == ["x/y/z/d.txt"]


def test_glob_walk_stops_at_its_entry_budget(
    root: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(30):
        (root / f"f{index}.txt").write_text("")
    monkeypatch.setattr(file_search, "GLOB_MAX_ENTRIES", 10)
    out = run("file_glob", pattern="**/*.md")
    assert out.error is not None and out.error.code == "limit_reached"
    assert "budget (10 entries" in out.error.message


def test_glob_refuses_overlong_patterns(run: Run) -> None:
    many = run("file_glob", pattern="/".join(["a*"] * 40))
    assert many.error is not None and "at most 32" in many.error.message
    long = run("file_glob", pattern="x" * 2000)
    assert long.error is not None and long.error.code == "invalid_arguments"


# --- big files: bounded memory -----------------------------------------------

GIB = 1 << 30
RSS_BOUND_MB = 100

PROBE = """
import json, resource, sys
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.toolkit.workspace import Workspace
from contextengine.types import ToolCall
toolset, ctx = default_toolset(), ToolContext(Workspace(sys.argv[1]))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = toolset.execute(ToolCall("c1", sys.argv[2], sys.argv[3]), ctx)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = out.error.code if out.error else None
grew_mb = (after - before) / 1024
print(json.dumps({"grew_mb": grew_mb, "code": code, "head": out.text[:300], "tail": out.text[-300:]}))
"""


def probe(root: Path, tool: str, **arguments: Any) -> dict[str, Any]:
    """Run one tool call in a fresh process; its peak RSS growth (MB) and outcome."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(root), tool, json.dumps(arguments)],
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def sparse(path: Path, head: bytes, size: int) -> None:
    """A file of ``size`` bytes that starts with ``head``: the rest is a hole (no disk)."""
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)


def test_reading_five_lines_of_a_1gb_file_stays_small(root: Path) -> None:
    sparse(root / "huge.log", b"".join(b"line %d\n" % n for n in range(1, 3000)), GIB)
    out = probe(root, "file_read", path="huge.log", start_line=1, end_line=5)
    assert out["code"] is None
    assert out["head"].startswith("1\tline 1\n2\tline 2\n3\tline 3\n4\tline 4\n5\tline 5\n")
    assert out["grew_mb"] < RSS_BOUND_MB


def test_one_huge_line_is_shown_cut_not_held(root: Path) -> None:
    with (root / "one.txt").open("wb") as handle:
        for _ in range(300):
            handle.write(b"b" * (1 << 20))
    out = probe(root, "file_read", path="one.txt", start_line=1, end_line=1)
    assert out["code"] is None and out["head"].startswith("1\tbbb")
    assert "[... this line goes on past the 268435456 bytes read]" in out["tail"]
    assert out["grew_mb"] < RSS_BOUND_MB
    (root / "one.txt").write_bytes(b"b" * 3_000_000 + b"\n")
    out = probe(root, "file_read", path="one.txt")
    assert out["code"] is None and out["head"].startswith("1\tbbb")
    assert "[... 2000000 bytes of this line cut]" in out["tail"]


def test_a_line_past_the_scan_limit_is_refused_not_searched_for(root: Path) -> None:
    sparse(root / "huge.log", b"".join(b"line %d\n" % n for n in range(1, 3000)), GIB)
    out = probe(root, "file_read", path="huge.log", start_line=5000)
    assert out["code"] == "limit_reached" and "past the first 268435456 bytes" in out["head"]
    assert out["grew_mb"] < RSS_BOUND_MB


def test_sparse_binary_is_refused_before_it_is_read(root: Path) -> None:
    sparse(root / "blob.bin", b"", GIB)
    started = time.monotonic()
    out = probe(root, "file_read", path="blob.bin")
    assert out["code"] == "binary_file"
    assert out["grew_mb"] < RSS_BOUND_MB
    assert time.monotonic() - started < 10


def test_edit_and_grep_refuse_a_1gb_file_without_reading_it(root: Path) -> None:
    sparse(root / "huge.txt", b"needle\n", GIB)
    edit = probe(root, "file_edit", path="huge.txt", old_text="needle", new_text="pin")
    assert edit["code"] == "limit_reached" and edit["grew_mb"] < RSS_BOUND_MB
    grep = probe(root, "file_grep", pattern="needle", path="huge.txt")
    assert grep["code"] == "limit_reached" and grep["grew_mb"] < RSS_BOUND_MB
    folder = probe(root, "file_grep", pattern="needle")
    assert folder["code"] is None and "not searched: huge.txt" in folder["tail"]
    assert folder["grew_mb"] < RSS_BOUND_MB
