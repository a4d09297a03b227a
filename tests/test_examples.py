"""Every program under ``examples/`` runs, twice in a row, against local model servers.

Each example takes its model from the environment as a user's run would
(``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``; the Anthropic one ``ANTHROPIC_*``), here the
permissive servers of ``support.any_model`` and ``providers.fake_servers``. It runs in a
fresh working folder, and a second time in the same folder: what the first run left there
(sessions, workspaces) must not break the second.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import contextengine
from providers.fake_servers import FakeModelServer
from support.any_model import ANSWER, AnyModel, any_model

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[AnyModel, FakeModelServer]]:
    """An OpenAI-compatible server and an Anthropic one, both answering anything."""
    with (
        any_model() as openai,
        FakeModelServer("anthropic", lambda _: {"content": ANSWER}) as claude,
    ):
        yield openai, claude


def test_the_examples_are_found() -> None:
    assert len(EXAMPLES) >= 10, EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT / "examples")))
def test_example_runs_twice(
    example: Path, servers: tuple[AnyModel, FakeModelServer], tmp_path: Path
) -> None:
    openai, claude = servers
    source = str(Path(contextengine.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")]),
        "OPENAI_BASE_URL": openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": claude.base_url,
        "ANTHROPIC_API_KEY": "test-key",
    }
    for run in (1, 2):
        done = subprocess.run(
            [sys.executable, str(example)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"run {run} of {example.name}:\n{done.stderr[-3000:]}"
        assert done.stdout.strip(), f"run {run} of {example.name} printed nothing"
