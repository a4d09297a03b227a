"""Shell completion: Typer's script for each shell, and bash completing real words with it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "contextengine"]


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTENGINE_")}
    return {**env, **extra}


@pytest.mark.parametrize(
    ("shell", "marker"),
    [
        ("bash", "complete -o default -F _contextengine_completion contextengine"),
        ("zsh", "compdef _contextengine_completion contextengine"),
        ("fish", "complete --command contextengine"),
    ],
)
def test_show_completion_prints_the_script_for_the_program_name(shell: str, marker: str) -> None:
    # Typer reads the shell from the process tree; this variable makes it take the argument
    env = cli_env(_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    done = subprocess.run(
        [*CLI, "--show-completion", shell], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert marker in done.stdout
    assert "_CONTEXTENGINE_COMPLETE" in done.stdout, "started as python -m, still named right"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_commands_and_choices_through_the_script(tmp_path: Path) -> None:
    program = tmp_path / "contextengine"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m contextengine "$@"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    env = cli_env(_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    env["PATH"] = f"{tmp_path}{os.pathsep}{env.get('PATH', '')}"
    script = subprocess.run(
        ["contextengine", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout

    def complete(*words: str) -> list[str]:
        line = " ".join(f'"{w}"' for w in words)
        probe = (
            f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
            '_contextengine_completion contextengine; printf "%s\\n" "${COMPREPLY[@]}"'
        )
        done = subprocess.run(
            ["bash", "-c", probe], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("contextengine", "re") == ["replay", "report"]
    assert "high" in complete("contextengine", "run", "--reasoning-effort", "")
    assert "--api-key" in complete("contextengine", "run", "--api")
