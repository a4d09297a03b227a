"""Bad input on the command line: one ``error:`` line naming the problem, exit 2, no traceback.

Each case builds its files in ``tmp_path`` and runs the real entry point (``main``) in this
process; the last test runs a few of them in a child process as a user would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from contextengine import Agent, Config
from contextengine.cli import main
from contextengine.providers.scripted import ScriptedProvider

Case = Callable[[Path], list[str]]
VLLM = ["-p", "vllm", "-m", "m"]  # builds without a key or a connection
UNREACHABLE = "postgresql://u:secret@127.0.0.1:1/db"  # nothing listens on port 1


def write(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def config(name: str, data: str | bytes) -> Case:
    """``run`` with the config file ``name`` holding ``data``."""
    return lambda tmp: [
        "run",
        "hi",
        *VLLM,
        "-w",
        str(tmp / "ws"),
        "-c",
        str(write(tmp / name, data)),
    ]


def run_with(*options: str) -> Case:
    """``run`` with extra options."""
    return lambda tmp: ["run", "hi", *VLLM, "-w", str(tmp / "ws"), *options]


def session(change: Callable[[Path], object]) -> Case:
    """``run --resume`` of a real session folder after ``change(folder)``."""

    def case(tmp: Path) -> list[str]:
        agent = Agent(ScriptedProvider([]), tmp / "ws", Config())
        agent.session.close()
        change(agent.session_dir)
        return ["run", "hi", *VLLM, "--resume", str(agent.session_dir)]

    return case


def trajectory(data: str | bytes, *options: str) -> Case:
    """``replay`` of a trajectory file holding ``data``."""
    return lambda tmp: ["replay", str(write(tmp / "run.json", data)), "--json", *options]


GOOD_TRAJECTORY = json.dumps({"task": "t", "steps": [{"assistant": "done"}]})


def usage(data: str | bytes) -> Case:
    """``report`` of a session folder whose ``usage.jsonl`` holds ``data``."""
    return lambda tmp: ["report", str(write(tmp / "s" / "usage.jsonl", data).parent), "--json"]


USAGE_LINE = json.dumps(
    {
        "step": 1,
        "purpose": "main",
        "model": "gpt-4o",
        "input_tokens": 10,
        "cached_tokens": 0,
        "cache_write_tokens": 0,
        "output_tokens": 1,
        "latency_s": 0.1,
    }
)

CASES: dict[str, tuple[Case, str]] = {
    # configuration files and the environment
    "config not UTF-8": (config("c.toml", b"max_steps = 3\n\xff\xfe"), "not UTF-8"),
    "config not TOML": (config("c.toml", "max_steps = = 3"), "not valid"),
    "config not YAML": (config("c.yaml", "max_steps: [1,"), "not valid"),
    "config a YAML list": (config("c.yaml", "- 1\n- 2\n"), "expected a table"),
    "config unknown key": (config("c.toml", "colour = 1"), "unknown setting 'colour'"),
    "config wrong type": (config("c.toml", 'context_window = "big"'), "context_window"),
    "config zero steps": (config("c.toml", "max_steps = 0"), "max_steps"),
    "config NaN timeout": (config("c.toml", "request_timeout_s = nan"), "request_timeout_s"),
    "config infinite summary timeout": (
        config("c.yaml", "summary_timeout_s: .inf"),
        "summary_timeout_s",
    ),
    "config negative retries": (config("c.toml", "max_retries = -1"), "max_retries"),
    "config nested 5000 deep": (
        config("c.toml", "a = " + "[" * 5000 + "]" * 5000),
        "nested too deeply",
    ),
    "config YAML nested 5000 deep": (
        config("c.yaml", "a: " + "[" * 5000 + "]" * 5000),
        "nested too deeply",
    ),
    "config missing": (lambda tmp: ["run", "hi", *VLLM, "-c", str(tmp / "no.toml")], "no.toml"),
    "config a folder": (lambda tmp: ["run", "hi", *VLLM, "-c", str(tmp)], "is a directory"),
    # command-line options
    "timeout negative": (run_with("--timeout", "-1"), "--timeout: "),
    "timeout NaN": (run_with("--timeout", "nan"), "--timeout: "),
    "timeout not a number": (run_with("--timeout", "soon"), "'--timeout'"),
    "retries negative": (run_with("--retries", "-1"), "--retries: "),
    "retries too many": (run_with("--retries", "1000"), "--retries: "),
    "protocol unknown": (run_with("--protocol", "xml"), "--protocol must be"),
    "provider unknown": (lambda tmp: ["run", "hi", "-p", "nope"], "unknown provider 'nope'"),
    "provider needs a base URL": (
        lambda tmp: ["run", "hi", "-p", "openai-compatible", "-m", "m"],
        "needs a base URL",
    ),
    "provider needs a key": (lambda tmp: ["run", "hi", "-p", "openai", "-m", "m"], "OPENAI_API"),
    "port too large": (
        lambda tmp: ["serve", "--port", "99999", *VLLM],
        "'--port': Input should be less than or equal to 65535",
    ),
    "port negative": (lambda tmp: ["serve", "--port", "-5", *VLLM], "'--port'"),
    "command unknown": (lambda tmp: ["frobnicate"], "No such command 'frobnicate'"),
    "option unknown": (lambda tmp: ["run", "--colour", "red"], "No such option"),
    # workspaces
    "workspace is a file": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(write(tmp / "f", "x"))],
        "File exists",
    ),
    "workspace under a file": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(write(tmp / "f", "x") / "ws")],
        "Not a directory",
    ),
    "workspace in a missing folder": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(tmp / "missing" / "ws")],
        "missing/ws: its folder",
    ),
    # model servers
    "base URL of colons": (
        lambda tmp: ["run", "hi", "-p", "openai-compatible", "-m", "m", "--base-url", "::::"],
        "base URL '::::' is not",
    ),
    "base URL garbage": (
        lambda tmp: ["run", "hi", "-p", "openai-compatible", "-m", "m", "--base-url", "garbage"],
        "base URL 'garbage' is not",
    ),
    "server not listening": (
        lambda tmp: [
            "run",
            "hi",
            "-p",
            "vllm",
            "-m",
            "x",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--retries",
            "0",
            "-w",
            str(tmp / "ws"),
        ],
        "cannot connect to http://127.0.0.1:1/v1/chat/completions",
    ),
    # sessions given to --resume
    "resume a file": (
        lambda tmp: ["run", "hi", *VLLM, "--resume", str(write(tmp / "f", "x"))],
        "not a session folder",
    ),
    "resume a missing folder": (
        lambda tmp: ["run", "hi", *VLLM, "--resume", str(tmp / "nothing")],
        "not a session folder",
    ),
    "resume a missing folder without a provider": (
        lambda tmp: ["run", "--resume", str(tmp / "nothing"), "hi"],
        "nothing: not a session folder",
    ),
    "resume an empty folder": (
        lambda tmp: ["run", "hi", *VLLM, "--resume", str(tmp)],
        "no session log",
    ),
    "session.json without workspace": (
        session(lambda d: write(d / "session.json", '{"session_id": "x"}')),
        "'workspace'",
    ),
    "session.json a list": (session(lambda d: write(d / "session.json", "[]")), "'workspace'"),
    "session.json workspace not text": (
        session(lambda d: write(d / "session.json", '{"workspace": 7}')),
        "'workspace'",
    ),
    "session.json not JSON": (
        session(lambda d: write(d / "session.json", "{")),
        "session.json unreadable",
    ),
    "session.json missing": (session(lambda d: (d / "session.json").unlink()), "session.json"),
    "session log empty": (session(lambda d: write(d / "session.jsonl", "")), "session.jsonl"),
    "session log header not JSON": (
        session(lambda d: write(d / "session.jsonl", "garbage\n")),
        "session.jsonl:1",
    ),
    "session log bad middle line": (
        session(
            lambda d: write(
                d / "session.jsonl", (d / "session.jsonl").read_text() + "garbage\n{}\n"
            )
        ),
        "session.jsonl:2",
    ),
    # trajectories given to replay
    "trajectory missing": (lambda tmp: ["replay", str(tmp / "no.json")], "cannot read"),
    "trajectory a folder": (lambda tmp: ["replay", str(tmp)], "cannot read"),
    "trajectory not UTF-8": (trajectory(b'{"task": "\xff"}'), "not UTF-8"),
    "trajectory not JSON": (trajectory("{"), "not valid JSON"),
    "trajectory nested 900 deep": (
        trajectory('{"task": "t", "steps": [{}], "x": ' + "[" * 900 + "]" * 900 + "}"),
        "nested deeper than 100",
    ),
    "trajectory nested 100000 deep": (trajectory("[" * 100_000), "nested deeper than 100"),
    "trajectory NaN": (
        trajectory(
            '{"task": "t", "steps": [{"tool_calls": [{"name": "a", "arguments": {"x": NaN}}]}]}'
        ),
        "NaN is not valid JSON",
    ),
    "trajectory Infinity": (trajectory('{"task": "t", "steps": [], "n": 1e999}'), "out of range"),
    "trajectory without steps": (trajectory('{"task": "t", "steps": []}'), "steps: expected at"),
    "trajectory a list": (trajectory("[]"), "expected a JSON object"),
    "trajectory without task": (trajectory('{"steps": [{}]}'), "task: required"),
    "trajectory bad call name": (
        trajectory('{"task": "t", "steps": [{"tool_calls": [{"name": 3}]}]}'),
        "steps[0].tool_calls[0].name",
    ),
    "replay unknown prices": (trajectory(GOOD_TRAJECTORY, "--prices", "free"), "'free'"),
    "replay unknown flag": (trajectory(GOOD_TRAJECTORY, "--flags", "nonsense=1"), "nonsense"),
    "replay bad history mode": (
        trajectory(GOOD_TRAJECTORY, "--history-mode", "everything"),
        "history_mode",
    ),
    # the session store
    "store unknown kind": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(tmp), "--store", "redis://h/0"],
        "store 'redis://h/0': unknown kind 'redis'",
    ),
    "store unreachable": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(tmp), "--store", UNREACHABLE],
        "store postgresql://u:***@127.0.0.1:1/db: cannot connect",
    ),
    "serve store unreachable": (
        lambda tmp: ["serve", *VLLM, "-w", str(tmp), "--port", "0", "--store", UNREACHABLE],
        "store postgresql://u:***@127.0.0.1:1/db: cannot connect",
    ),
    "store file URL with a host": (
        lambda tmp: ["run", "hi", *VLLM, "-w", str(tmp), "--store", "file://host/x"],
        "a file URL needs a local path",
    ),
    # usage logs given to report
    "report a file": (lambda tmp: ["report", str(write(tmp / "f", "x"))], "not a folder"),
    "report without usage.jsonl": (lambda tmp: ["report", str(tmp)], "no usage.jsonl"),
    "usage bad middle line": (usage("garbage\n" + USAGE_LINE + "\n"), "usage.jsonl:1"),
    "usage not UTF-8": (usage(b"\xff\xfe\n"), "not UTF-8"),
    "usage wrong field type": (
        usage(USAGE_LINE.replace("10", '"ten"') + "\n" + USAGE_LINE + "\n"),
        "usage.jsonl:1: bad usage record (field 'input_tokens'",
    ),
    "usage NaN": (usage(USAGE_LINE.replace("0.1", "NaN") + "\n" + USAGE_LINE + "\n"), "NaN"),
    "usage line not an object": (usage("[1]\n" + USAGE_LINE + "\n"), "not a JSON object"),
    "usage missing field": (usage('{"step": 1}\n' + USAGE_LINE + "\n"), "missing fields"),
    "report unknown prices": (
        lambda tmp: [*usage(USAGE_LINE + "\n")(tmp), "--prices", "free"],
        "'free'",
    ),
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No settings, keys or config path from the machine running the tests."""
    for name in list(os.environ):
        if name.startswith(("CONTEXTENGINE_", "OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(name)


def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run the CLI entry point with ``args``; its exit code."""
    monkeypatch.setattr(sys, "argv", ["contextengine", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    code = exited.value.code
    return code if isinstance(code, int) else 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_error_line_and_exit_2(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    build, fragment = CASES[name]
    args = build(tmp_path)
    capsys.readouterr()
    code = run_main(args, monkeypatch)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("contextengine: error: ")
    assert fragment in lines[0]


def test_a_workspace_in_a_missing_folder_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_main(["run", "hi", *VLLM, "-w", str(tmp_path / "a" / "ws")], monkeypatch) == 2
    assert not (tmp_path / "a").exists()


def test_resuming_a_session_copied_to_a_short_path_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = Agent(ScriptedProvider([]), tmp_path / "ws", Config())
    agent.session.close()
    short = Path(tempfile.mkdtemp())  # /tmp/NAME: fewer parents than a session tree has
    try:
        copy = shutil.copytree(agent.session_dir, short / "s")
        capsys.readouterr()
        assert run_main(["run", "hi", *VLLM, "--resume", str(copy)], monkeypatch) == 2
        err = capsys.readouterr().err
    finally:
        shutil.rmtree(short)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"{copy.resolve()}: not inside a session tree" in err


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(
    "env",
    [
        {"CONTEXTENGINE_MAX_STEPS": "many"},
        {"CONTEXTENGINE_COLOUR": "1"},
        {"CONTEXTENGINE_MASKING": "maybe"},
    ],
)
def test_bad_environment_settings_are_one_error_line(
    env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    code = run_main(["run", "hi", *VLLM, "-w", str(tmp_path)], monkeypatch)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert next(iter(env)) in err or next(iter(env)).removeprefix("CONTEXTENGINE_").lower() in err


def test_a_torn_last_usage_line_is_reported_and_skipped(tmp_path: Path) -> None:
    args = usage(USAGE_LINE + "\n" + USAGE_LINE[:20])(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "contextengine.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["calls"] == 1
    assert "usage.jsonl:2: torn last usage record skipped" in done.stderr


def test_the_installed_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    for name in ("session.json without workspace", "trajectory nested 900 deep", "port too large"):
        build, fragment = CASES[name]
        done = subprocess.run(
            [sys.executable, "-m", "contextengine.cli", *build(tmp_path / name.replace(" ", "_"))],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and fragment in done.stderr
