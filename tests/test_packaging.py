"""The package metadata: the ``all`` extra installs every feature extra."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
NOT_IN_ALL = {"all", "dev", "docs", "bench", "local", "pydantic-ai", "openai-agents", "langchain"}
"""Tooling (dev, docs), model weights (bench), the compiled embedded engine (local) and the framework
integrations (each pins its framework: install the one you use)."""


def test_the_all_extra_names_every_feature_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    (requirement,) = extras["all"]
    match = re.fullmatch(r"contextengine\[([a-z0-9_,-]+)\]", requirement)
    assert match, requirement
    assert set(match.group(1).split(",")) == set(extras) - NOT_IN_ALL
