"""``kill -9`` at hundreds of points of a scripted session, each resumed in a fresh process.

``kill_driver.py`` kills a session (tool calls: ``file_write`` and ``shell_exec``) just before
each of its writes and fsyncs in turn, and after random delays, then resumes it and lets a
model that heeds the "interrupted" results finish. Every point must show: no request after
the resume with a tool call lacking its result, no op executed more often than the model
asked for it, every byte fsynced before the kill still in the log, every op done (exactly
once at the hooked points). The stress variant runs 1,000+ points.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DRIVER = Path(__file__).with_name("kill_driver.py")

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the driver forks and reads /proc/self/fd"
)


@pytest.fixture
def kill_dir(tmp_path: Path) -> Iterator[Path]:
    """A scratch folder in RAM when there is one: a SIGKILL keeps the page cache, so the
    crash semantics are the same, and fsync costs nothing there."""
    if not Path("/dev/shm").is_dir():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="kill-resume-", dir="/dev/shm"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(base: Path, specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One driver process per spec, side by side; their JSON lines."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(DRIVER), str(base / f"driver{k}"), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, spec in enumerate(specs)
    ]
    rows = []
    for proc in procs:
        out, err = proc.communicate()
        assert proc.returncode == 0, err[-4000:]
        rows += [json.loads(line) for line in out.splitlines()]
    return rows


def _check(rows: list[dict[str, Any]], at_least: int) -> None:
    failures = {f"{r['point']}": r["failures"] for r in rows if r["failures"]}
    assert failures == {}
    points = [r for r in rows if r["point"] != "reference"]
    assert len(points) >= at_least
    # The points reach every kind of crash: before the session existed, between a reply
    # and its calls' start records, and while a call was running.
    assert sum(r["killed"] for r in points) >= 0.75 * len(points)
    assert any(not r["resumed"] for r in points)
    assert sum(r["not_run"] for r in points) > 0
    assert sum(r["may_have_run"] for r in points) > 0


def test_kill_9_at_every_write_and_fsync_then_resume(kill_dir: Path) -> None:
    rows = _run(
        kill_dir,
        [
            {"scenario": "mixed", "random": 10, "seed": 1},
            {"scenario": "lean", "random": 40, "seed": 2},
        ],
    )
    _check(rows, at_least=200)


@pytest.mark.stress
@pytest.mark.timeout(1800)
@pytest.mark.skipif(
    os.environ.get("CONTEXTENGINE_STRESS") != "1", reason="set CONTEXTENGINE_STRESS=1"
)
def test_kill_9_stress(kill_dir: Path) -> None:
    rows = _run(
        kill_dir,
        [
            {"scenario": "mixed", "random": 300, "seed": 11},
            {"scenario": "lean", "random": 300, "seed": 12},
            {"scenario": "mixed", "hooked": [], "random": 300, "seed": 13},
        ],
    )
    _check(rows, at_least=1000)
