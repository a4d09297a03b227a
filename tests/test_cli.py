"""The command line: user mistakes are one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "contextengine.cli"]


def run_cli(
    *args: str, cwd: Path | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    full_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTEXTENGINE_", "OPENAI_", "ANTHROPIC_"))
    }
    full_env.update(env or {})
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, cwd=cwd, env=full_env, timeout=120
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_help_lists_the_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("demo", "run"):
        assert command in result.stdout


def test_demo_runs_offline(tmp_path):
    result = run_cli("demo", "--workspace", str(tmp_path / "ws"))
    assert result.returncode == 0, result.stderr
    assert "hello, world" in result.stdout
    assert "0 cache breaks" in result.stdout
    assert (tmp_path / "ws" / "greet.py").exists()


def test_missing_api_key(tmp_path):
    result = run_cli("run", "hello", "-p", "openai", "-m", "gpt-test", "-w", str(tmp_path))
    assert_one_line_error(result, "OPENAI_API_KEY")


def test_unknown_provider(tmp_path):
    result = run_cli("run", "hello", "-p", "nope", "-w", str(tmp_path))
    assert_one_line_error(result, "unknown provider 'nope'")


def test_bad_config_key(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("contxt_window = 5\n")
    result = run_cli("run", "hi", "-p", "openai", "-m", "x", "-c", str(config), "-w", str(tmp_path))
    assert_one_line_error(result, "unknown setting 'contxt_window'", str(config))


def test_bad_env_override(tmp_path):
    result = run_cli("run", "hi", "-w", str(tmp_path), env={"CONTEXTENGINE_DIVERSITY": "maybe"})
    assert_one_line_error(result, "CONTEXTENGINE_DIVERSITY")


def test_a_bad_option_value_names_the_option_not_the_config_file(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text("request_timeout_s = 30\n")
    result = run_cli("run", "hi", "-c", str(config), "--timeout", "0", "-w", str(tmp_path))
    assert_one_line_error(result, "--timeout: Input should be greater than 0")
    assert str(config) not in result.stderr


def test_resume_of_a_folder_without_a_session(tmp_path):
    result = run_cli(
        "run",
        "hi",
        "-p",
        "openai",
        "-m",
        "x",
        "--resume",
        str(tmp_path),
        env={"OPENAI_API_KEY": "k"},
    )
    assert_one_line_error(result, "no session log")


def test_corrupt_session_log_names_file_and_line(tmp_path):
    session = tmp_path / "s"
    session.mkdir()
    (session / "session.jsonl").write_text(
        '{"created":"x","diversity":true,"format":"contextengine-session","protocol":"native","session_id":"s","version":1}\n'
        "{oops}\n"
        '{"v":1,"i":1}\n'
    )
    result = run_cli(
        "run",
        "hi",
        "-p",
        "openai",
        "-m",
        "x",
        "--resume",
        str(session),
        env={"OPENAI_API_KEY": "k"},
    )
    assert_one_line_error(result, "session.jsonl:2")


@pytest.mark.parametrize("protocol", ["xml"])
def test_bad_protocol(tmp_path, protocol):
    result = run_cli(
        "run",
        "hi",
        "-p",
        "openai",
        "-m",
        "x",
        "--protocol",
        protocol,
        "-w",
        str(tmp_path),
        env={"OPENAI_API_KEY": "k"},
    )
    assert_one_line_error(result, "--protocol")


def test_run_help_lists_the_modes():
    result = run_cli("run", "--help", env={"COLUMNS": "200"})
    assert result.returncode == 0
    for name in ("chat", "code", "search", "thinking", "knowledge", "deep_research"):
        assert name in result.stdout.lower()


def test_run_in_a_mode_sends_its_mask_and_refuses_an_unknown_one(tmp_path):
    from providers.fake_servers import FakeModelServer

    with FakeModelServer(
        "responses", [{"content": "A complete answer, without any tool."}]
    ) as fake:
        result = run_cli(
            "run",
            "hi",
            "-p",
            "openai",
            "-m",
            "gpt-test",
            "--base-url",
            fake.base_url,
            "-w",
            str(tmp_path),
            "--mode",
            "chat",
            env={"OPENAI_API_KEY": "k"},
        )
        assert result.returncode == 0, result.stderr
        (body,) = [r.json() for r in fake.answered]
    assert body["tool_choice"] == "none"
    assert len(body["tools"]) > 0
    bad = run_cli("run", "hi", "-w", str(tmp_path), "--mode", "PLAN")
    assert_one_line_error(bad, "--mode")


def test_mode_from_the_config_file(tmp_path):
    from providers.fake_servers import FakeModelServer

    config = tmp_path / "c.toml"
    config.write_text('mode = "CHAT"\n')
    with FakeModelServer(
        "responses", [{"content": "A complete answer, without any tool."}]
    ) as fake:
        result = run_cli(
            "run",
            "hi",
            "-p",
            "openai",
            "-m",
            "gpt-test",
            "--base-url",
            fake.base_url,
            "-c",
            str(config),
            "-w",
            str(tmp_path / "ws"),
            env={"OPENAI_API_KEY": "k"},
        )
        assert result.returncode == 0, result.stderr
        (body,) = [r.json() for r in fake.answered]
    assert body["tool_choice"] == "none"
    config.write_text('mode = "PLAN"\n')
    bad = run_cli("run", "hi", "-c", str(config), "-w", str(tmp_path / "ws"))
    assert_one_line_error(bad, "'mode'", "DEEP_RESEARCH")


def test_generation_settings_from_the_command_line_and_the_config(tmp_path):
    from providers.fake_servers import FakeModelServer

    config = tmp_path / "c.toml"
    config.write_text('prompt_cache_retention = "24h"\ntemperature = 0.9\n')
    options = ["--max-tokens", "77", "--temperature", "0.3", "--reasoning-effort", "low"]
    with FakeModelServer(
        "responses", [{"content": "A complete answer, without any tool."}]
    ) as fake:
        result = run_cli(
            "run",
            "hi",
            "-p",
            "openai",
            "-m",
            "gpt-test",
            "--base-url",
            fake.base_url,
            "-c",
            str(config),
            "-w",
            str(tmp_path / "ws"),
            *options,
            env={"OPENAI_API_KEY": "k"},
        )
        assert result.returncode == 0, result.stderr
        (body,) = [r.json() for r in fake.answered]
    assert fake.answered[0].path == "/v1/responses"
    assert body["max_output_tokens"] == 77
    assert body["temperature"] == 0.3
    assert body["reasoning"] == {"effort": "low"}
    assert body["prompt_cache_retention"] == "24h"
    bad = run_cli("run", "hi", "-w", str(tmp_path), "--reasoning-effort", "huge")
    assert_one_line_error(bad, "--reasoning-effort")


def test_version_prints_the_installed_version():
    from importlib.metadata import version

    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"contextengine {version('contextengine')}"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_api_key_reaches_a_self_hosted_server(tmp_path, how):
    from providers.fake_servers import FakeModelServer

    answer = [{"content": "A complete answer, without any tool."}]
    with FakeModelServer("openai", answer) as fake:
        common = ["run", "hi", "-p", "vllm", "-m", "m", "--base-url", fake.base_url]
        if how == "flag":
            done = run_cli(*common, "-w", str(tmp_path), "--api-key", "sk-local-1")
        else:
            done = run_cli(
                *common, "-w", str(tmp_path), env={"CONTEXTENGINE_API_KEY": "sk-local-1"}
            )
        assert done.returncode == 0, done.stderr
        (request,) = fake.answered
    assert request.headers["authorization"] == "Bearer sk-local-1"


def test_resume_chooses_the_recorded_provider_model_and_url_again(tmp_path):
    from providers.fake_servers import FakeModelServer

    answers = [{"content": "A complete first answer."}, {"content": "A complete second answer."}]
    with FakeModelServer("openai", answers) as fake:
        env = {"OPENAI_API_KEY": "k"}
        first = run_cli(
            "run", "hi", "-p", "vllm", "-m", "my-model", "--base-url", fake.base_url,
            "-w", str(tmp_path), env=env,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        (session,) = {p.parent for p in tmp_path.rglob("session.json")}
        again = run_cli("run", "again", "--resume", str(session), env=env)
        assert again.returncode == 0, again.stderr
        bodies = [r.json() for r in fake.answered]
    assert [b["model"] for b in bodies] == ["my-model", "my-model"]
    meta = json.loads((session / "session.json").read_text())
    assert (meta["provider"], meta["model"], meta["base_url"]) == (
        "vllm",
        "my-model",
        fake.base_url,
    )


def test_a_flag_given_on_resume_wins_over_the_recorded_one(tmp_path):
    from providers.fake_servers import FakeModelServer

    answers = [{"content": "A complete first answer."}, {"content": "A complete second answer."}]
    with FakeModelServer("openai", answers) as fake:
        env = {"OPENAI_API_KEY": "k"}
        first = run_cli(
            "run", "hi", "-p", "vllm", "-m", "my-model", "--base-url", fake.base_url,
            "-w", str(tmp_path), env=env,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
        (session,) = {p.parent for p in tmp_path.rglob("session.json")}
        again = run_cli("run", "again", "--resume", str(session), "-m", "other", env=env)
        assert again.returncode == 0, again.stderr
        bodies = [r.json() for r in fake.answered]
    assert [b["model"] for b in bodies] == ["my-model", "other"]


def test_max_steps_stops_the_turn_and_says_how_to_go_on(tmp_path):
    script = tmp_path / "replies.json"
    listing = {"tool_calls": [{"name": "file_ls", "arguments": {"path": "."}}]}
    script.write_text(json.dumps([listing] * 5))
    result = run_cli(
        "run", "List forever.", "-p", f"scripted:{script}", "-w", str(tmp_path / "ws"),
        "--max-steps", "2", env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "stopped after 2 model calls (max_steps) without a final answer" in out, out
    assert "contextengine run --resume" in out and '"Continue."' in out, out
    bad = run_cli("run", "hi", "-w", str(tmp_path), "--max-steps", "0")
    assert_one_line_error(bad, "--max-steps")
