"""``benchmarks/replay_cut.py``: replays of recorded runs cut short, one markdown row each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "examples" / "trajectories"


def run_cut(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "replay_cut.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_each_fraction_is_one_row_over_every_file() -> None:
    done = run_cut("--trajectories", str(SAMPLES), "--fractions", "0.5", "1")
    assert done.returncode == 0, done.stderr
    rows = [
        line
        for line in done.stdout.splitlines()
        if line.startswith("| 0") or line.startswith("| 1")
    ]
    assert [r.split("|")[1].strip() for r in rows] == ["0.5", "1"]
    for r in rows:
        ratio = float(r.split("|")[2].strip().rstrip("x"))
        assert 0 < ratio < 2
    files = len(list(SAMPLES.glob("*.json")))
    assert done.stderr.count("[0.5]") == files


def test_a_fraction_outside_zero_to_one_is_refused() -> None:
    done = run_cut("--trajectories", str(SAMPLES), "--fractions", "1.5")
    assert done.returncode != 0
    assert "error: --fractions must be in (0, 1]" in done.stderr


def test_session_logs_are_replayed_and_a_file_that_is_no_run_is_named(tmp_path: Path) -> None:
    transcript = ROOT / "tests" / "fixtures" / "claude_code"
    for log in transcript.glob("*.jsonl"):
        (tmp_path / log.name).write_bytes(log.read_bytes())
    (tmp_path / "notes.jsonl").write_text("")
    done = run_cut("--trajectories", str(tmp_path), "--fractions", "1")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("[1]") == len(list(transcript.glob("*.jsonl")))
    assert "skipped: " in done.stderr and "notes.jsonl: empty file" in done.stderr
    (tmp_path / "notes.jsonl").rename(tmp_path / "notes.txt")
    for log in tmp_path.glob("*.jsonl"):
        log.write_text("")
    done = run_cut("--trajectories", str(tmp_path), "--fractions", "1")
    assert done.returncode != 0 and "error: no trajectories in" in done.stderr
