"""The linters run inside the test suite, so the README's one test command checks them too.

``ruff check`` and ``ruff format --check`` cover src, tests, benchmarks and examples; ``mypy`` (with the
pydantic plugin, configured in pyproject.toml) covers src. All three come with the ``dev``
extra and run side by side; mypy keeps its cache in ``.mypy_cache`` so a second run is quick.
No function in src is longer than ``MAX_FUNCTION_LINES`` (a longer one is split into named steps).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINTED = ("src", "tests", "benchmarks", "examples")
MAX_FUNCTION_LINES = 60  # issue 34: no function in src over it

CHECKS: dict[str, tuple[str, ...]] = {
    "ruff check": ("ruff", "check", "--no-cache", *LINTED),
    "ruff format --check": ("ruff", "format", "--check", "--no-cache", *LINTED),
    "mypy": ("mypy",),
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every check's finished process, started together."""
    running = {
        name: subprocess.Popen(
            [sys.executable, "-m", *argv],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, argv in CHECKS.items()
    }
    finished = {}
    for name, process in running.items():
        output, _ = process.communicate(timeout=600)
        finished[name] = subprocess.CompletedProcess(process.args, process.returncode, output)
    return finished


@pytest.mark.parametrize("check", list(CHECKS))
def test_check_is_clean(check: str, outcomes: dict[str, subprocess.CompletedProcess[str]]) -> None:
    result = outcomes[check]
    if "No module named" in result.stdout:
        pytest.fail(f"{check} is not installed: pip install -e '.[dev]'\n{result.stdout}")
    assert result.returncode == 0, f"{check} found problems:\n{result.stdout}"


MAX_UNTYPED_DICTS = 60
"""Most lines of src that may say ``dict[str, Any]`` (what ``grep -rn`` counts; issue #34:
wire data, rows and tool arguments have real types, a JSON value type where the shape is
chosen outside)."""


def test_untyped_dicts_stay_few() -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted((REPO / "src").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "dict[str, Any]" in line
    ]
    assert len(found) <= MAX_UNTYPED_DICTS, (
        f"{len(found)} dict[str, Any] in src (at most {MAX_UNTYPED_DICTS}); type them instead:\n"
        + "\n".join(found)
    )


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """Every function (methods and nested ones included) in ``source`` over ``limit``
    lines, decorators aside: its name and length."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > limit:
                found.append((node.name, lines))
    return found


def test_the_length_check_sees_methods_and_nested_functions() -> None:
    body = "".join(f"    x{k} = {k}\n" for k in range(3))
    source = f"class A:\n    def m(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    source += f"def outer():\n    def inner():\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    assert long_functions(source, 3) == [("outer", 5), ("m", 4), ("inner", 4)]
    assert long_functions(source, 5) == []


def test_no_function_in_src_is_over_the_limit() -> None:
    too_long = [
        f"{path.relative_to(REPO)}: {name} ({lines} lines)"
        for path in sorted((REPO / "src").rglob("*.py"))
        for name, lines in long_functions(path.read_text(encoding="utf-8"), MAX_FUNCTION_LINES)
    ]
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)
