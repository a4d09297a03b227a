"""Sandbox settings that let commands run this test interpreter (its venv and base install)."""

from __future__ import annotations

import sys

from contextengine.toolkit.sandbox import SandboxPolicy

PYTHON_PATHS: tuple[str, ...] = tuple(sorted({sys.prefix, sys.base_prefix}))
PYTHON_VISIBLE = SandboxPolicy(read_only_paths=PYTHON_PATHS)
