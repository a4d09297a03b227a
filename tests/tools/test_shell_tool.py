import os
import time
from dataclasses import replace
from pathlib import Path

from contextengine.toolkit.classify import STDERR_TAIL_CHARS
from contextengine.tools.context import ToolContext


def _gone(pid: int) -> bool:
    """A killed process is gone or a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in {"Z", "X"}


def test_success_keeps_streams_apart(root: Path, run) -> None:
    out = run("shell_exec", command="echo out1; echo err1 >&2; echo out2; pwd")
    assert out.status == "success"
    assert out.data["stdout"] == f"out1\nout2\n{root}\n"
    assert out.data["stderr"] == "err1\n"
    assert (out.data["exit_code"], out.data["stdout_lines"], out.data["stderr_lines"]) == (0, 3, 1)
    assert out.text == (f"out1\nout2\n{root}\n<stderr>\nerr1\n</stderr>\n[exit code 0]")


def test_nonzero_exit_is_an_error_with_code_and_stderr_tail(run) -> None:
    script = "for i in $(seq 1 30); do echo e$i >&2; done; echo partial; exit 7"
    out = run("shell_exec", command=script)
    assert out.status == "error"
    assert out.error.code == "nonzero_exit"
    message = out.error.message
    assert message.startswith("command exited with code 7")
    assert "e30" in message and "e11" in message and "e10\n" not in message
    assert out.data["exit_code"] == 7
    assert out.data["stdout"] == "partial\n"
    assert out.text.endswith("\n[exit code 7]")
    assert "e1\n" in out.text


def test_error_message_keeps_a_whole_traceback(run) -> None:
    code = "import sys\\nsys.setrecursionlimit(60)\\ndef f(n): return f(n + 1)\\nf(0)"
    out = run("shell_exec", command=f"python3 -c \"exec('{code}')\"")
    assert out.error.code == "nonzero_exit"
    assert "Traceback (most recent call last):" in out.error.message
    assert out.error.message.rstrip().endswith("RecursionError: maximum recursion depth exceeded")
    assert out.data["stderr"].strip() in out.error.message


def test_a_stderr_of_long_lines_is_quoted_up_to_a_bound(run) -> None:
    script = "python3 -c \"import sys; [print('x' * 5000, i, file=sys.stderr) for i in range(3)]\"; exit 3"
    out = run("shell_exec", command=script)
    assert len(out.data["stderr"]) > 15_000
    tail = out.error.message.split("stderr (tail):\n", 1)[1]
    assert len(tail) == STDERR_TAIL_CHARS and tail.startswith("…") and tail.endswith(" 2")


def test_empty_stderr_is_said(run) -> None:
    out = run("shell_exec", command="false")
    assert out.error.message == "command exited with code 1; stderr is empty"


def test_timeout_kills_the_process_group_and_keeps_partial_output(
    root: Path, ctx: ToolContext, run
) -> None:
    run.ctx = replace(
        run.ctx, sandbox=None
    )  # unconfined, so the pid written to bg.pid is a host pid
    started = time.monotonic()
    out = run(
        "shell_exec",
        command="echo started; sleep 30 & echo $! > bg.pid; echo oops >&2; sleep 30",
        timeout_s=0.5,
    )
    assert time.monotonic() - started < 5
    assert out.status == "error"
    assert out.error.code == "timeout"
    assert "timed out after 0.5 s" in out.error.message
    assert "oops" in out.error.message
    assert out.data["timed_out"] is True
    assert out.data["stdout"] == "started\n"
    assert "<timeout>" in out.text
    background = int((root / "bg.pid").read_text())
    deadline = time.monotonic() + 3
    while not _gone(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(background)


def test_default_timeout_comes_from_the_context(ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, shell_timeout_s=0.3)
    assert run("shell_exec", command="sleep 10").error.code == "timeout"


def test_outputs_are_capped_head_and_tail(ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, max_output_bytes=1000)
    out = run("shell_exec", command="printf 'S'; head -c 10000 /dev/zero | tr '\\0' a; printf 'E'")
    stdout = out.data["stdout"]
    assert stdout.startswith("Saaa") and stdout.endswith("aaaE")
    assert "[... 9002 bytes of stdout omitted: output cap is 1000 bytes ...]" in stdout
    assert len(stdout) < 1200


def test_environment_and_no_stdin(ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, env={"PATH": os.environ["PATH"], "GREETING": "hello"})
    out = run("shell_exec", command="echo $GREETING; cat")
    assert out.data["stdout"] == "hello\n"


def test_background_process_holding_pipes_does_not_block(ctx: ToolContext, run) -> None:
    run.ctx = replace(
        run.ctx, sandbox=None
    )  # in the sandbox a background process dies with the command
    started = time.monotonic()
    out = run("shell_exec", command="sleep 2 & echo done")
    assert time.monotonic() - started < 1.9
    assert out.status == "success"
    assert out.data["stdout"] == "done\n"
    assert "background process still holds the output pipes" in out.text


def test_timeout_argument_is_bounded(run) -> None:
    assert run("shell_exec", command="true", timeout_s=601).error.code == "invalid_arguments"
    assert run("shell_exec", command="true", timeout_s=0).error.code == "invalid_arguments"
    assert run("shell_exec", command="").error.code == "invalid_arguments"


def test_a_search_finding_nothing_answers_no_and_is_no_error(root: Path, run) -> None:
    (root / "app.py").write_text("def main():\n    pass\n")
    for command in (
        "grep -n missing_name app.py",
        "test -f nowhere.txt",
        "cmp -s app.py /dev/null",
    ):
        out = run("shell_exec", command=command)
        assert out.status == "success", command
        assert out.error is None
        assert out.text == "[exit code 1]"
        assert out.data["exit_code"] == 1


def test_a_failure_in_status_alone_is_still_an_error_unless_a_predicate_answered(
    root: Path, run
) -> None:
    for command in ("false", "exit 1", "python3 -c 'raise SystemExit(1)'"):
        out = run("shell_exec", command=command)
        assert (out.status, out.error.code) == ("error", "nonzero_exit"), command
    # a search that cannot run says why on stderr and exits 2: an error
    out = run("shell_exec", command="grep -n x no_such_file.py")
    assert (out.status, out.data["exit_code"]) == ("error", 2)
    # a line that printed something before its search answered no is not silent
    for command in ("echo found; grep -n x /dev/null", "echo note >&2; grep -n x /dev/null"):
        assert run("shell_exec", command=command).status == "error", command
