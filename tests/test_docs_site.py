"""The documentation site builds with ``mkdocs build --strict``: a broken link, a missing
anchor, a page left out of the nav, an included example that moved or a public docstring
mkdocstrings cannot render fails the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import contextengine

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    source = str(Path(contextengine.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,  # snippets (examples/...) resolve from the repo root
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
            "NO_MKDOCS_2_WARNING": "1",
        },
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    for name in contextengine.__all__:
        assert f'id="contextengine.{name}"' in api, f"{name} is missing from the API reference"
    examples = (tmp_path / "site" / "library" / "index.html").read_text(encoding="utf-8")
    assert "OPENAI_MODEL" in examples, "the included example's text is on the page"
