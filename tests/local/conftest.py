"""The tiny local model, built once per test session into a temporary folder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A seed-0 tiny model (HF folder + GGUF); building it takes about a second."""
    from contextengine.local.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)
