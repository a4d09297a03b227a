"""The provider registry: a new provider is its module (a ``from_settings``) and one row.

The toy provider below is registered by one row in ``PROVIDERS`` and nothing else, then
chosen by name on the command line; the session it runs records it, so a resume can
choose it again. Files a new provider touches: its module under ``providers/`` and its row
in ``providers/factory.py`` (plus its pip extra in ``pyproject.toml`` when it needs an SDK).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from contextengine.cli import main
from contextengine.errors import ConfigError
from contextengine.providers.factory import PROVIDERS, ProviderRow, make_provider
from contextengine.providers.scripted import ScriptedProvider
from contextengine.providers.wire import ProviderSettings


def from_settings(settings: ProviderSettings) -> ScriptedProvider:
    """The toy provider: it answers once, naming its model."""
    return ScriptedProvider(
        [{"content": f"The toy model {settings.model} answers in full."}], model=settings.model
    )


def test_a_provider_registered_by_one_row_runs_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(PROVIDERS, "toy", ProviderRow(f"{__name__}:from_settings", "toy"))
    args = ["run", "hi", "-p", "toy", "-m", "toy-1", "-w", str(tmp_path / "ws")]
    monkeypatch.setattr(sys, "argv", ["contextengine", *args])
    try:
        main()
    except SystemExit as exited:
        assert exited.code in (0, None), capsys.readouterr()
    assert "The toy model toy-1 answers in full." in capsys.readouterr().out
    (meta,) = (tmp_path / "ws" / ".contextengine").rglob("session.json")
    assert json.loads(meta.read_text())["provider"] == "toy"


def test_a_row_whose_module_is_missing_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "toy", ProviderRow("no_such_sdk_module:from_settings", "toy"))
    with pytest.raises(ConfigError, match=r"pip install 'contextengine\[toy\]'"):
        make_provider("toy", "m")


def test_every_row_names_a_function_of_its_module() -> None:
    for name, row in PROVIDERS.items():
        module, function = row.factory.split(":")
        try:
            found = importlib.import_module(module)
        except ImportError:  # an extra that is not installed here
            continue
        assert callable(getattr(found, function, None)), name
