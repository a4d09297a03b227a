"""One exception tree: every error class the library defines descends from ContextEngineError
(or is a tool-internal signal that a tool turns into a ToolError value, or the agent loop's
interrupt, which a hook gives and the loop catches), and errors.py draws it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import contextengine
from contextengine import errors
from contextengine.errors import ContextEngineError, ProviderError
from contextengine.integrations.mirror import MissingIntegration

TOOL_SIGNALS = {
    # Raised and caught inside one tool, which returns a ToolError value instead.
    "contextengine.tools.delegation.DelegationRefused",
    "contextengine.tools.files.Refusal",
    "contextengine.tools.mcp.clients.McpCallError",
    "contextengine.toolkit.sandbox.SandboxUnavailable",
    "contextengine.toolkit.seccomp.FilterUnavailable",
    "contextengine.tools.web_http.WebRefused",
}

LOOP_SIGNALS = {
    # The one interrupt channel (agent/flow.py): raised from a hook's result, caught where
    # the loop guards a step; never an error and never out of the loop.
    "contextengine.agent.flow.InterruptFlow",
    "contextengine.agent.flow.RebootDue",
    "contextengine.agent.flow.HumanNeeded",
}


def exception_classes_in_errors() -> list[type[BaseException]]:
    """Every exception class ``contextengine.errors`` exports."""
    return [
        value
        for _, value in inspect.getmembers(errors, inspect.isclass)
        if issubclass(value, BaseException)
    ]


def exception_classes_in_package() -> dict[str, type[BaseException]]:
    """Every exception class defined in any module of the package, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for module_info in pkgutil.walk_packages(contextengine.__path__, "contextengine."):
        try:
            module = importlib.import_module(module_info.name)
        except MissingIntegration:
            continue  # an integration whose framework (an optional extra) is not installed
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


@pytest.mark.parametrize("cls", exception_classes_in_errors(), ids=lambda c: c.__name__)
def test_every_class_in_errors_descends_from_context_engine_error(
    cls: type[BaseException],
) -> None:
    assert issubclass(cls, ContextEngineError)
    assert cls.__name__ in (errors.__doc__ or "")


def test_every_error_class_in_the_package_is_in_the_tree_and_drawn() -> None:
    outside = []
    undrawn = []
    for name, cls in exception_classes_in_package().items():
        if name in TOOL_SIGNALS or name in LOOP_SIGNALS:
            continue
        if not issubclass(cls, ContextEngineError):
            outside.append(name)
        elif cls.__name__ not in (errors.__doc__ or "") and cls.__base__ in (
            ContextEngineError,
            ProviderError,
        ):
            undrawn.append(name)
    assert outside == []
    assert undrawn == []


def test_provider_errors_carry_status_and_retryable() -> None:
    assert (ProviderError("x").status, ProviderError("x").retryable) == (None, False)
    assert errors.RateLimitError("x", status=429).retryable
    assert not errors.ServerError("x", status=500, retryable=False).retryable
    assert errors.ProviderTimeoutError("x").retryable
    assert isinstance(errors.ProviderTimeoutError("x"), errors.ProviderConnectionError)


def test_public_names_stay_importable_where_they_were() -> None:
    from contextengine.memory import PlanUpdateError
    from contextengine.memory.plan import PlanUpdateError as FromPlan
    from contextengine.providers.retry import BrokenReplyError
    from contextengine.server.errors import ApiError

    assert PlanUpdateError is FromPlan is errors.PlanUpdateError
    assert BrokenReplyError is errors.BrokenReplyError
    assert issubclass(ApiError, ContextEngineError)
