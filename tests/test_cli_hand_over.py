"""`contextengine run` hands over to the human: a prompt on a terminal, a clear line otherwise."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from test_cli import CLI

QUESTION = "Which variable should the script print?"
ANSWER = "Print the name variable."
FINAL = "Done: the script prints the name variable now."


def failing_step() -> dict[str, Any]:
    command = "python3 -c 'print(undefined_name)'"
    return {
        "content": "Running it.",
        "tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}],
    }


# Three errors of one class trigger the reboot, whose answer asks for a human.
SCRIPT: list[dict[str, Any]] = [
    failing_step(),
    failing_step(),
    failing_step(),
    {
        "content": f"1. Probe.\n2. Three runs.\n3. Undefined.\n4. Ask.\n5. Yes.\nHUMAN_HELP: yes - {QUESTION}"
    },
    {"content": FINAL},
]


def cli_env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTEXTENGINE_", "OPENAI_", "ANTHROPIC_"))
    }
    return {**env, "OPENAI_API_KEY": "k", "COLUMNS": "200"}


def run_args(base_url: str, workspace: Path) -> list[str]:
    model = ["-p", "openai", "-m", "gpt-test", "--base-url", base_url]
    return [*CLI, "run", "Probe python.", *model, "-w", str(workspace)]


def user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for item in body["input"]:
        if item.get("role") == "user":
            content = item["content"]
            texts.append(content if isinstance(content, str) else str(content))
    return texts


def test_without_a_terminal_the_turn_ends_with_the_question_and_how_to_answer(
    tmp_path: Path,
) -> None:
    from providers.fake_servers import FakeModelServer

    with FakeModelServer("responses", SCRIPT) as fake:
        result = subprocess.run(
            run_args(fake.base_url, tmp_path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=cli_env(),
            timeout=120,
        )
        asked = len(fake.answered)
    assert result.returncode == 0, result.stderr
    assert f"The agent asks you: {QUESTION}" in result.stdout
    assert "The turn ended waiting for your answer." in result.stdout
    assert "contextengine run --resume" in result.stdout
    assert FINAL not in result.stdout
    assert asked == 4, "three failing steps and the reboot; no call after the hand-over"


def test_on_a_terminal_the_answer_continues_the_same_turn(tmp_path: Path) -> None:
    from providers.fake_servers import FakeModelServer

    with FakeModelServer("responses", SCRIPT) as fake:
        leader, follower = os.openpty()
        try:
            process = subprocess.Popen(
                run_args(fake.base_url, tmp_path),
                stdin=follower,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(),
            )
            os.write(leader, f"{ANSWER}\n".encode())  # the terminal buffers it for input()
            out, err = process.communicate(timeout=120)
        finally:
            os.close(leader)
            os.close(follower)
        bodies = [r.json() for r in fake.answered]
    assert process.returncode == 0, err
    assert f"The agent asks you: {QUESTION}" in out
    assert "answer> " in out
    assert FINAL in out
    assert "The turn ended waiting" not in out
    assert len(bodies) == 5
    assert any(ANSWER in text for text in user_texts(bodies[-1]))
