"""``contextengine run`` against a slowly streaming OpenAI-compatible server, watched as a
user watches it: the reply's text grows on the terminal before the reply ends, a status
line names the tool while it runs, and ``--output-format stream-json`` is one JSON event a
line as the events happen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from providers.fake_servers import FakeModelServer

WORDS = [f"word{n:02d}" for n in range(24)]
ANSWER = "The answer streams: " + " ".join(WORDS) + "."
DELAY_S = 0.25


class Watched:
    """A CLI process whose stdout is read as it comes, each read stamped with its time."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "contextengine.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.reads: list[tuple[float, bytes]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := os.read(self.process.stdout.fileno(), 65536):
            self.reads.append((time.monotonic(), chunk))

    def finish(self) -> tuple[int, str]:
        """Wait for the end; the exit code and stderr."""
        code = self.process.wait(timeout=120)
        self._reader.join(timeout=10)
        assert self.process.stderr is not None
        return code, self.process.stderr.read().decode()

    def first_time(self, text: bytes) -> float:
        """When ``text`` was first seen in what was read so far."""
        seen = b""
        for at, chunk in self.reads:
            seen += chunk
            if text in seen:
                return at
        raise AssertionError(f"{text!r} never printed: {seen[-2000:]!r}")

    def output_before(self, moment: float) -> bytes:
        return b"".join(chunk for at, chunk in self.reads if at < moment)


def cli_env(terminal: bool) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONTEXTENGINE_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(COLUMNS="200", LINES="40")
    if terminal:
        env["TTY_COMPATIBLE"] = "1"  # rich draws its live view as on a terminal
    return env


def run_args(server: FakeModelServer, workspace: Path, *extra: str) -> list[str]:
    return [
        "run", "Answer slowly.", "-p", "openai-compatible", "-m", "fake-model",
        "--base-url", server.base_url, "-w", str(workspace), *extra,
    ]  # fmt: skip


def test_the_reply_text_grows_on_the_terminal_before_the_reply_ends(tmp_path: Path) -> None:
    with FakeModelServer(
        "openai", [{"content": ANSWER}], event_delay_s=DELAY_S, pieces=len(WORDS)
    ) as server:
        watched = Watched(run_args(server, tmp_path), cli_env(terminal=True))
        code, err = watched.finish()
    assert code == 0, err
    early, late = watched.first_time(WORDS[2].encode()), watched.first_time(WORDS[-1].encode())
    assert late - early > 2 * DELAY_S * 0.8, "the text did not arrive piece by piece"
    shown = watched.output_before(late)
    assert WORDS[2].encode() in shown and WORDS[-1].encode() not in shown
    # the status line of the model call, with its elapsed time and tokens so far
    assert b"main call \xc2\xb7 " in shown and b"out so far" in shown


def test_a_status_line_names_the_tool_while_it_runs(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "shell_exec", "arguments": {"command": "sleep 2; echo slept"}}]},
        {"content": "The command slept for two seconds and then printed slept."},
    ]
    with FakeModelServer("openai", script) as server:
        watched = Watched(run_args(server, tmp_path), cli_env(terminal=True))
        code, err = watched.finish()
    assert code == 0, err
    started = watched.first_time(b"running shell_exec")
    ended = watched.first_time(b"success")
    assert ended - started > 1.0
    assert b"running shell_exec \xc2\xb7 1." in watched.output_before(ended), "elapsed time grows"


def test_stream_json_is_one_event_a_line_as_they_happen(tmp_path: Path) -> None:
    script = [
        {"content": "Listing.", "tool_calls": [{"name": "file_ls", "arguments": {}}]},
        {"content": ANSWER},
    ]
    with FakeModelServer("openai", script, event_delay_s=DELAY_S, pieces=len(WORDS)) as server:
        args = run_args(server, tmp_path, "--output-format", "stream-json")
        watched = Watched(args, cli_env(terminal=False))
        code, err = watched.finish()
    assert code == 0, err
    lines = b"".join(chunk for _, chunk in watched.reads).decode().splitlines()
    events = [json.loads(line) for line in lines]
    types = [e["type"] for e in events]
    assert types[-1] == "done" and events[-1]["result"]["final_answer"] == ANSWER
    for kind in ("model_call", "thinking", "usage", "tool_call", "tool_result"):
        assert kind in types
    assert events[types.index("tool_call")]["name"] == "file_ls"
    text = "".join(e["text"] for e in events if e["type"] == "thinking")
    assert text == "Listing." + ANSWER
    # the first words of the answer were on stdout before its last word was
    assert watched.first_time(WORDS[-1].encode()) - watched.first_time(b"word02") > DELAY_S


def test_ctrl_c_stops_the_turn_and_says_how_to_resume(tmp_path: Path) -> None:
    # Ctrl-C while the model answers: the reply's tool call (streamed after its text) never runs
    call = {"name": "file_write", "arguments": {"path": "stop.txt", "content": "ran"}}
    reply = {"content": ANSWER, "tool_calls": [call]}
    with FakeModelServer("openai", [reply], event_delay_s=1.0, pieces=40) as server:
        watched = Watched(run_args(server, tmp_path), cli_env(terminal=False))
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        watched.process.send_signal(signal.SIGINT)
        code, err = watched.finish()
    out = b"".join(chunk for _, chunk in watched.reads).decode()
    assert code == 130, out + err
    assert "Traceback" not in out + err
    assert "Stopped. Continue with: contextengine run --resume " in out
    session = out.split("--resume ", 1)[1].split()[0]
    assert (Path(session) / "session.json").is_file()
    assert not (tmp_path / "stop.txt").exists()


def test_session_commands_show_context_cost_plan_and_compact(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "Hello! The workspace is empty, nothing to do."}]))
    typed = "/help\n/context\nhello\n/context\n/cost\n/plan\n/compact\n/nope\nexit\n"
    done = subprocess.run(
        [sys.executable, "-m", "contextengine.cli", "run", "-p", f"scripted:{script}",
         "-w", str(tmp_path / "ws")],
        input=typed, capture_output=True, text=True, env=cli_env(terminal=False), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for command in ("/context", "/cost", "/compact", "/plan", "/help"):
        assert command in out
    first, second = out.split("the next request\n")[1:3]
    for part in ("tools", "system", "tail", "total"):
        assert part in first
    assert "0%" in first.split("total")[1].splitlines()[0], "nothing cached before a call"
    assert "history" in second and "total" in second
    assert "1 model calls" in out and "input tokens" in out
    assert "# Task Plan" in out
    assert "compaction" in out
    assert "unknown command /nope; /help lists them" in out
