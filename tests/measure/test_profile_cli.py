"""``contextengine profile``: the table, ``--json`` in the documented shape, ``--html``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from measure.test_profile import STEP, SYSTEM, TASK, TOOLS, chat

CLI = [sys.executable, "-m", "contextengine.cli", "profile"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def capture(tmp_path: Path) -> Path:
    path = tmp_path / "capture.jsonl"
    lines = [
        chat([TASK], SYSTEM + "Now: 2026-11-22 10:00:01"),
        {"request": chat([TASK, *STEP], SYSTEM + "Now: 2026-11-22 10:00:07"), "usage": None},
        chat([TASK, *STEP], SYSTEM + "Now: 2026-11-22 10:00:07", tools=TOOLS[::-1]),
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_json_has_the_documented_shape(capture: Path) -> None:
    result = run(str(capture), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    requests = report["requests"]
    assert [r["index"] for r in requests] == [0, 1, 2]
    for r in requests:
        assert {"index", "total_tokens", "reusable_tokens", "break"} <= set(r)
    assert requests[0]["break"] is None
    assert requests[1]["break"]["cause"] == "timestamp"
    assert requests[1]["break"]["message_index"] == 0
    assert requests[2]["break"]["cause"] == "tools_reordered"
    assert {"cause", "message_index", "snippet"} <= set(requests[2]["break"])
    assert report["summary"]["breaks"] == 2
    assert 0 < report["summary"]["hit_rate"] < 1


def test_table_names_causes_and_fixes(capture: Path) -> None:
    result = run(str(capture))
    assert result.returncode == 0, result.stderr
    assert "a timestamp in the system prompt" in result.stdout
    assert "tools reordered" in result.stdout
    assert "fix: Send the tools in one fixed order" in result.stdout


def test_html_report_is_self_contained(capture: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    result = run(str(capture), "--html", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert "<svg" in html and html.count('fill="#2a7"') == 3  # one reusable bar per request
    assert "a timestamp in the system prompt" in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html and "<script" not in html


def test_bad_capture_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n{"oops"\n')
    result = run(str(bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "bad.jsonl:2" in result.stderr
