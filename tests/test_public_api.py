import importlib
import inspect
import pkgutil

import contextengine
from contextengine.integrations.mirror import MissingIntegration

DESIGN_NAMES = {
    "canonical_json",
    "scrub_dynamic",
    "find_mentions",
    "add_mention_reminders",
    "ScriptedProvider",
    "Config",
}


def test_design_names_are_exported():
    assert set(contextengine.__all__) >= DESIGN_NAMES


def test_all_is_complete_and_resolvable():
    for name in contextengine.__all__:
        assert hasattr(contextengine, name), name
    public = {
        n
        for n, v in vars(contextengine).items()
        if not n.startswith("_") and not inspect.ismodule(v)
    }
    assert public == set(contextengine.__all__)


def test_every_public_name_has_a_docstring():
    missing = []
    for info in pkgutil.walk_packages(contextengine.__path__, "contextengine."):
        try:
            module = importlib.import_module(info.name)
        except MissingIntegration:
            continue  # an integration whose framework (an optional extra) is not installed
        for name, value in vars(module).items():
            if name.startswith("_") or getattr(value, "__module__", None) != module.__name__:
                continue
            if (inspect.isclass(value) or inspect.isfunction(value)) and not inspect.getdoc(value):
                missing.append(f"{module.__name__}.{name}")
    assert not missing, missing
