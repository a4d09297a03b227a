import sys
from dataclasses import replace
from pathlib import Path

import pytest

from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.classify import classify_error, error_tail, traceback_exception
from support.sandbox import PYTHON_VISIBLE

PY = sys.executable


@pytest.fixture(autouse=True)
def _python_visible(run) -> None:
    """Commands run this interpreter (and its pytest), which the sandbox must show."""
    run.ctx = replace(run.ctx, sandbox=PYTHON_VISIBLE)


def test_success_has_no_class() -> None:
    assert classify_error("file_read", ToolOutcome.ok("fine")) is None


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("invalid_arguments", "invalid_tool_call"),
        ("unknown_tool", "invalid_tool_call"),
        ("masked_tool", "masked_tool"),
        ("timeout", "timeout"),
        ("not_found", "not_found"),
        ("no_match", "no_match"),
        ("outside_workspace", "outside_workspace"),
    ],
)
def test_error_codes_map_to_classes(code: str, expected: str) -> None:
    assert classify_error("x", ToolOutcome.fail(code, "boom")) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("def f(:\n    pass\n", "SyntaxError"),
        ("if True:\nprint(1)\n", "SyntaxError"),
        ("import no_such_module_xyz\n", "ImportError"),
        ("from os import no_such_name\n", "ImportError"),
        ("print(undefined_name)\n", "NameError"),
        ("1 + 'a'\n", "TypeError"),
        ("{}['k']\n", "KeyError"),
        (
            "try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('wrapped') from e\n",
            "ValueError",
        ),
    ],
)
def test_real_python_failures(root: Path, run, script: str, expected: str) -> None:
    (root / "s.py").write_text(script)
    out = run("shell_exec", command=f"{PY} s.py")
    assert out.error.code == "nonzero_exit"
    assert classify_error("shell_exec", out) == expected


def test_real_pytest_failure(root: Path, run) -> None:
    (root / "test_x.py").write_text("def test_a():\n    assert 1 == 2\n\ndef test_b():\n    pass\n")
    out = run("shell_exec", command=f"{PY} -m pytest -q -p no:cacheprovider test_x.py")
    assert classify_error("shell_exec", out) == "test_failure"


def test_real_pytest_collection_import_error(root: Path, run) -> None:
    (root / "test_y.py").write_text("import no_such_module_xyz\n\ndef test_a():\n    pass\n")
    out = run("shell_exec", command=f"{PY} -m pytest -q -p no:cacheprovider test_y.py")
    assert classify_error("shell_exec", out) == "ImportError"


def test_real_unittest_failure(root: Path, run) -> None:
    (root / "t.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    def test_a(self):\n        self.assertEqual(1, 2)\n\nunittest.main()\n"
    )
    out = run("shell_exec", command=f"{PY} t.py")
    assert classify_error("shell_exec", out) == "test_failure"


def test_plain_nonzero_exit_and_missing_command(run) -> None:
    assert classify_error("shell_exec", run("shell_exec", command="exit 3")) == "nonzero_exit"
    missing = run("shell_exec", command="no_such_command_xyz --help")
    assert classify_error("shell_exec", missing) == "command_not_found"


def test_timeout_from_the_shell(run) -> None:
    out = run("shell_exec", command="sleep 5", timeout_s=0.2)
    assert classify_error("shell_exec", out) == "timeout"


def test_exception_inside_a_tool_uses_the_traceback_name() -> None:
    message = (
        "tool boom raised an exception:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in run\n    raise PermissionError(13)\nPermissionError: 13\n'
    )
    assert classify_error("boom", ToolOutcome.fail("exception", message)) == "PermissionError"


# Observations of other harnesses (raw text, no error code), copied from the recorded
# runs in /work/shared/bench/trajectories (MIT-licensed sources, see that folder's README).
MSA2_DJANGO_11999_STEP_8 = """<returncode>1</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/reproduce_issue.py", line 22, in <module>
    django.setup()
  File "/testbed/django/__init__.py", line 16, in setup
    from django.urls import set_script_prefix
  File "/testbed/django/urls/__init__.py", line 1, in <module>
    from .base import (
  File "/testbed/django/urls/base.py", line 3, in <module>
    from asgiref.local import Local
ModuleNotFoundError: No module named 'asgiref'
</output>"""
MSA1_SYMPY_19637_STEP_3 = """<returncode>1</returncode>
<output>
Traceback (most recent call last):
  File "/testbed/reproduce_issue.py", line 4, in <module>
    expr = kernS(text)
  File "/testbed/sympy/core/sympify.py", line 516, in kernS
    hit = kern in s
UnboundLocalError: local variable 'kern' referenced before assignment
</output>"""
OH_DJANGO_11133_STEP_7 = """cd /testbed && PYTHONPATH=/testbed python3 /workspace/reproduce.py
Traceback (most recent call last):
  File "/workspace/reproduce.py", line 4, in <module>
    response = HttpResponse("My Content")
  File "/testbed/django/conf/__init__.py", line 61, in _setup
    % (desc, ENVIRONMENT_VARIABLE))
django.core.exceptions.ImproperlyConfigured: Requested setting DEFAULT_CHARSET, but settings are not configured.[Python Interpreter: /opt/miniconda3/envs/testbed/bin/python]
root@openhands-workspace:/testbed #\x20
[Command finished with exit code 1]"""
MSA1_SYMPY_19637_STEP_17 = """<returncode>1</returncode>
<output>
sympy/core/tests/test_sympify.py[50] ...........f..............E............s..s
fss..Es                                                                   [FAIL]

_____________ sympy/core/tests/test_sympify.py:test_evaluate_false _____________
Traceback (most recent call last):
  File "/testbed/sympy/parsing/sympy_parser.py", line 1006, in parse_expr
    code = compile(evaluateFalse(code), '<string>', 'eval')
ValueError: Name node can't be used with 'False' constant

 tests finished: 41 passed, 5 skipped, 2 expected to fail, 2 exceptions,\x20
in 0.21 seconds\x20
DO *NOT* COMMIT!
</output>"""
OH_PONYC_4595_STEP_15 = "bash: ponyc: command not found"
# A failing command says no more than its exit status (a search through xargs); a harness
# refusing a reply with two actions states none: they are not one class of failure.
XARGS_GREP_EXIT_123 = """<returncode>123</returncode>
<output>
grep: sklearn/utils/tests: Is a directory
sklearn/feature_extraction/tests/test_text.py
</output>"""
MSA1_TWO_ACTIONS = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MSA2_DJANGO_11999_STEP_8, "ImportError"),
        (MSA1_SYMPY_19637_STEP_3, "UnboundLocalError"),
        (OH_DJANGO_11133_STEP_7, "ImproperlyConfigured"),
        (MSA1_SYMPY_19637_STEP_17, "test_failure"),
        (OH_PONYC_4595_STEP_15, "command_not_found"),
        ("fatal: The current branch spotter-dov has no upstream branch.", "error"),
        (XARGS_GREP_EXIT_123, "nonzero_exit"),
        ("make: *** [all] Error 2\n[Command finished with exit code 2]", "nonzero_exit"),
        ("Exit code 2\nerror: pathspec 'x' did not match any file(s) known to git", "nonzero_exit"),
        ("<returncode>0</returncode>\n<output>\n</output>", "error"),
        (MSA1_TWO_ACTIONS, "error"),
    ],
)
def test_recorded_foreign_errors(text: str, expected: str) -> None:
    outcome = ToolOutcome("error", text)
    assert classify_error("bash", outcome) == expected


def test_traceback_exception_takes_the_last_traceback() -> None:
    assert traceback_exception("no traceback here") is None
    assert traceback_exception(MSA1_SYMPY_19637_STEP_3) == "UnboundLocalError"


def test_error_tail_reaches_back_to_the_traceback() -> None:
    text = "\n".join(f"noise {i}" for i in range(50)) + "\n" + MSA2_DJANGO_11999_STEP_8
    tail = error_tail(text, 3)
    assert tail.startswith("Traceback (most recent call last):")
    assert tail.endswith("</output>")
    assert error_tail("a\nb\nc\nd", 2) == "c\nd"
