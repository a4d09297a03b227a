import json
import os
from pathlib import Path
from typing import Any

import pytest

from contextengine.compress.compressors import (
    READ_KEEP,
    Compressed,
    compress,
    compress_observation,
    tool_category,
)
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

SNIPPETS = json.loads(
    (Path(__file__).parent / "fixtures" / "trajectory_snippets.json").read_text(encoding="utf-8")
)["snippets"]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def run(root: Path):  # type: ignore[no-untyped-def]
    ctx = ToolContext(Workspace(root))
    toolset = default_toolset()

    def call(name: str, **arguments: Any) -> tuple[dict[str, Any], ToolOutcome]:
        return arguments, toolset.execute(ToolCall("c", name, json.dumps(arguments)), ctx)

    return call


TRAITS = default_toolset().traits


def ours(name: str, arguments: dict[str, Any], outcome: ToolOutcome, **kwargs: Any) -> Compressed:
    """Our tool's history form, with the compressor the tool declares."""
    return compress(name, arguments, outcome, compressor=TRAITS(name).compressor, **kwargs)


def history(name: str, arguments: dict[str, Any], outcome: ToolOutcome) -> dict[str, Any]:
    return json.loads(ours(name, arguments, outcome).text)


# --- shape ---------------------------------------------------------------------


def test_history_form_is_canonical_and_drops_text(root: Path, run) -> None:
    (root / "a.txt").write_text("x\n")
    args, out = run("file_read", path="a.txt")
    text = ours("file_read", args, out).text
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    obj = json.loads(text)
    assert set(obj) == {"status", "data"}
    assert obj["status"] == "success"
    assert ours("file_read", args, out).text == text


def test_error_is_kept_whole_and_only_on_failure(run) -> None:
    args, out = run("file_read", path="missing.txt")
    assert history("file_read", args, out) == {
        "status": "error",
        "data": {},
        "error": {"code": "not_found", "message": "missing.txt: no such file or directory"},
    }


# --- our tools -------------------------------------------------------------------


def test_read_keeps_at_most_500_numbered_lines(root: Path, run) -> None:
    (root / "big.py").write_text("".join(f"line {i}\n" for i in range(1, 701)))
    args, out = run("file_read", path="big.py")
    result = ours("file_read", args, out, full_ref="artifacts/obs-000003-file_read.txt")
    data = json.loads(result.text)["data"]
    lines = data["content"].split("\n")
    assert len(lines) == READ_KEEP + 1
    assert lines[0] == "  1\tline 1" and lines[499] == "500\tline 500"
    assert lines[500] == (
        "[... 200 of 700 lines cut; the full text is recoverable from "
        "artifacts/obs-000003-file_read.txt]"
    )
    assert (data["path"], data["start_line"], data["end_line"], data["total_lines"]) == (
        "big.py",
        1,
        700,
        700,
    )
    assert data["mtime"] == out.data["mtime"]
    assert result.cut


def test_read_slice_and_external_note(root: Path, run) -> None:
    (root / "a.py").write_text("a\nb\nc\nd\n")
    args, out = run("file_read", path="a.py", start_line=2, end_line=3)
    result = ours("file_read", args, out)
    assert json.loads(result.text)["data"]["content"] == "2\tb\n3\tc"
    assert not result.cut
    (root / "a.py").write_text("changed\n")
    stat = (root / "a.py").stat()
    os.utime(root / "a.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    args, out = run("file_read", path="a.py")
    data = history("file_read", args, out)["data"]
    assert data["content"] == "1\tchanged"
    assert data["note"] == "Note: a.py was modified externally."


def test_ls_keeps_dir_counts_and_first_20(root: Path, run) -> None:
    (root / "d").mkdir()
    for i in range(30):
        (root / "d" / f"f{i:02d}.txt").write_text("x" * i)
    (root / "d" / "sub").mkdir()
    args, out = run("file_ls", path="d")
    result = ours("file_ls", args, out)
    data = json.loads(result.text)["data"]
    assert data["dir"] == "d"
    assert data["counts"] == {"dirs": 1, "files": 30, "links": 0}
    assert data["entries"][:2] == ["f00.txt  (0 bytes)", "f01.txt  (1 bytes)"]
    assert len(data["entries"]) == 20
    assert data["more"].startswith("[... 11 of 31 entries cut;")
    assert result.cut


def test_glob_keeps_pattern_count_and_first_10(root: Path, run) -> None:
    for i in range(15):
        (root / f"m{i:02d}.py").write_text("")
    args, out = run("file_glob", pattern="*.py")
    data = history("file_glob", args, out)["data"]
    assert data["pattern"] == "*.py" and data["count"] == 15
    assert data["matches"] == [f"m{i:02d}.py" for i in range(10)]
    assert data["more"].startswith("[... 5 of 15 matches cut;")


def test_grep_keeps_summary_and_first_5(root: Path, run) -> None:
    (root / "a.py").write_text("hit\n" * 4)
    (root / "b.py").write_text("x\nhit\nhit\nhit\n")
    args, out = run("file_grep", pattern="hit")
    data = history("file_grep", args, out)["data"]
    assert data["summary"] == "7 matches in 2 files"
    assert data["matches"] == ["a.py:1:hit", "a.py:2:hit", "a.py:3:hit", "a.py:4:hit", "b.py:2:hit"]
    assert data["more"].startswith("[... 2 of 7 matches cut;")


def test_edit_keeps_file_ranges_and_snippets(root: Path, run) -> None:
    (root / "m.py").write_text("".join(f"v{i}\n" for i in range(100)))
    edits = [{"old_text": f"v{i}\n", "new_text": f"w{i}\n"} for i in (10, 30, 50, 70, 90)]
    args, out = run("file_edit", path="m.py", edits=edits)
    result = ours("file_edit", args, out)
    data = json.loads(result.text)["data"]
    assert data["path"] == "m.py"
    assert data["changed_lines"] == [[11, 11], [31, 31], [51, 51], [71, 71], [91, 91]]
    assert len(data["snippets"]) == 3
    assert "11\tw10" in data["snippets"][0]
    assert data["more"].startswith("[... 2 snippets cut;")
    assert result.cut


def test_write_keeps_action_and_first_30_lines(root: Path, run) -> None:
    content = "".join(f"row {i}\n" for i in range(1, 41))
    args, out = run("file_write", path="new.txt", content=content)
    result = ours("file_write", args, out)
    data = json.loads(result.text)["data"]
    assert (data["path"], data["action"], data["lines"]) == ("new.txt", "created", 40)
    head = data["head"].split("\n")
    assert head[0] == " 1\trow 1" and head[29] == "30\trow 30"
    assert head[30].startswith("[... 10 more lines not repeated; they are in this call's content")
    assert not result.cut


def test_shell_success_summary_head_tail_and_stderr_tail(run) -> None:
    command = "seq 1 100; seq 1 30 | sed 's/^/warn /' >&2"
    args, out = run("shell_exec", command=command)
    result = ours("shell_exec", args, out)
    data = json.loads(result.text)["data"]
    assert (data["exit_code"], data["stdout_lines"], data["stderr_lines"]) == (0, 100, 30)
    stdout = data["stdout"].split("\n")
    assert stdout[:5] == ["1", "2", "3", "4", "5"]
    assert stdout[5].startswith("[... 85 of 100 lines cut;")
    assert stdout[6:] == [str(i) for i in range(91, 101)]
    stderr = data["stderr_tail"].split("\n")
    assert stderr[0].startswith("[... 10 of 30 lines cut;")
    assert stderr[1:] == [f"warn {i}" for i in range(11, 31)]
    assert result.cut


def test_shell_failure_keeps_error_and_traceback_in_stdout(root: Path, run) -> None:
    script = "for i in range(50): print('noise', i)\nimport missing_mod_xyz\n"
    (root / "s.py").write_text(script)
    args, out = run("shell_exec", command="python3 s.py 2>&1")
    obj = history("shell_exec", args, out)
    assert obj["error"] == {"code": "nonzero_exit", "message": out.error.message}
    stdout = obj["data"]["stdout"]
    assert "Traceback (most recent call last):" in stdout
    assert stdout.endswith("ModuleNotFoundError: No module named 'missing_mod_xyz'")
    assert "noise 49" in stdout and "noise 20" not in stdout


def test_shell_failure_does_not_repeat_the_stderr_tail(run) -> None:
    args, out = run("shell_exec", command="echo bad >&2; exit 2")
    obj = history("shell_exec", args, out)
    assert "stderr_tail" not in obj["data"]
    assert obj["error"]["message"] == "command exited with code 2; stderr (tail):\nbad"


def test_todo_keeps_the_recap_only(run) -> None:
    todos = [{"content": f"step {i}", "status": "pending"} for i in range(8)]
    args, out = run("todo_write", todos=todos)
    assert history("todo_write", args, out)["data"] == {
        "recap": "Todo list updated: 8 steps (8 pending)."
    }


def test_other_tools_are_truncated_with_a_marker() -> None:
    text = "A" * 1500 + "B" * 3000 + "C" * 500
    outcome = ToolOutcome.ok(text, {"anything": 1})
    result = compress("memory_search", {}, outcome, full_ref="artifacts/x.txt")
    body = json.loads(result.text)["data"]["text"]
    assert body.startswith("A" * 1500 + "\n[... 3000 of 5000 chars cut;")
    assert "artifacts/x.txt" in body
    assert body.endswith("\n" + "C" * 500)
    assert result.cut
    short = compress("memory_search", {}, ToolOutcome.ok("tiny", {"a": 1}))
    assert json.loads(short.text)["data"] == {"text": "tiny"} and not short.cut


def test_long_lines_are_clipped(root: Path, run) -> None:
    (root / "min.js").write_text("x" * 5000 + "\n")
    args, out = run("file_read", path="min.js")
    content = history("file_read", args, out)["data"]["content"]
    assert content.startswith("1\t" + "x" * 1993)
    assert "[... 3002 chars cut;" in content


# --- categories ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "category"),
    [
        ("Bash", {}, "shell"),
        ("execute_bash", {}, "shell"),
        ("run_command", {}, "shell"),
        ("SHELL", {}, "shell"),
        ("Read", {}, "read"),
        ("read_file", {}, "read"),
        ("view", {}, "read"),
        ("str_replace_editor", {"command": "view"}, "read"),
        ("str_replace_based_edit_tool", {"command": "create"}, "write"),
        ("str_replace_editor", {"command": "str_replace"}, "edit"),
        ("str_replace_editor", {"command": "insert"}, "edit"),
        ("str_replace_editor", {}, "other"),
        ("Edit", {}, "edit"),
        ("MultiEdit", {}, "edit"),
        ("Write", {}, "write"),
        ("Grep", {}, "grep"),
        ("Glob", {}, "glob"),
        ("LS", {}, "ls"),
        ("TodoWrite", {}, "todo"),
        ("run_shell_command", {}, "shell"),  # Gemini CLI
        ("read_many_files", {}, "read"),
        ("replace", {}, "edit"),
        ("list_directory", {}, "ls"),
        ("search_file_content", {}, "grep"),
        ("exec_command", {}, "shell"),  # Codex
        ("apply_patch", {}, "edit"),
        ("terminal", {}, "shell"),  # the OpenHands SDK
        ("file_editor", {"command": "view"}, "read"),
        ("write_to_file", {}, "write"),  # Cline
        ("file_read", {}, "other"),
        ("think", {}, "other"),
    ],
)
def test_tool_categories(name: str, arguments: dict[str, Any], category: str) -> None:
    assert tool_category(name, arguments) == category


# --- other harnesses' recorded observations ------------------------------------------


def foreign(key: str) -> tuple[str, dict[str, Any], ToolOutcome, str]:
    snippet = SNIPPETS[key]
    text = snippet["observation"]
    outcome = ToolOutcome("error" if snippet["is_error"] else "success", text)
    return snippet["name"], snippet["arguments"], outcome, text


def test_foreign_editor_view_keeps_500_lines() -> None:
    name, args, outcome, text = foreign("oh_llama4_view_parser_c")
    result = compress(name, args, outcome)
    data = json.loads(result.text)["data"]
    assert data["path"] == args["path"]
    kept = data["content"].split("\n")
    total = text.count("\n") + (not text.endswith("\n"))
    assert kept[:500] == text.split("\n")[:500]
    assert kept[500].startswith(f"[... {total - 500} of {total} lines cut;")
    assert result.cut


def test_foreign_small_read_is_whole() -> None:
    name, args, outcome, text = foreign("cc_opus_read_small")
    result = compress(name, args, outcome)
    assert json.loads(result.text)["data"]["content"] == text.rstrip("\n")
    assert not result.cut


def test_foreign_grep_keeps_5_lines_and_count() -> None:
    name, args, outcome, text = foreign("cc_opus_grep")
    data = json.loads(compress_observation(name, args, outcome))["data"]
    assert data["lines"] == len(text.splitlines())
    assert data["matches"].split("\n")[:5] == text.split("\n")[:5]


def test_foreign_write_keeps_content_head() -> None:
    name, args, outcome, _ = foreign("cc_opus_write")
    data = json.loads(compress_observation(name, args, outcome))["data"]
    assert data["path"] == args["file_path"]
    assert data["result"].startswith("File created successfully")
    first = args["content"].split("\n")[0]
    assert data["head"].startswith(f" 1\t{first}")
    name, args, outcome, _ = foreign("oh_claude_create")
    data = json.loads(compress_observation(name, args, outcome))["data"]
    assert data["head"].startswith(" 1\tfrom django.http import HttpResponse")


def test_foreign_failed_create_keeps_the_error_text() -> None:
    name, args, outcome, text = foreign("oh_claude_create_exists_error")
    obj = json.loads(compress_observation(name, args, outcome))
    assert obj["status"] == "error"
    assert obj["data"]["result"] == text
    assert "head" not in obj["data"]


def test_foreign_edit_keeps_result_text() -> None:
    for key in ("oh_claude_str_replace", "cc_opus_edit"):
        name, args, outcome, text = foreign(key)
        data = json.loads(compress_observation(name, args, outcome))["data"]
        assert data["result"] == text.rstrip("\n")


@pytest.mark.parametrize(
    "key",
    [
        "oh_claude_improperly_configured",
        "msa1_unbound_local",
        "msa2_module_not_found",
        "msa2r_module_not_found_carets",
        "msa1_sympy_test_failure",
    ],
)
def test_foreign_shell_errors_keep_the_whole_traceback(key: str) -> None:
    name, args, outcome, text = foreign(key)
    output = json.loads(compress_observation(name, args, outcome))["data"]["output"]
    start = text.rfind("Traceback (most recent call last):")
    assert text[start:].rstrip("\n") in output


def test_foreign_long_shell_output_keeps_head_and_tail() -> None:
    name, args, outcome, text = foreign("msa2_long_output")
    result = compress(name, args, outcome)
    data = json.loads(result.text)["data"]
    lines = text.split("\n")
    kept = data["output"].split("\n")
    assert kept[:5] == lines[:5]
    assert kept[5].startswith(f"[... {len(lines) - 25} of {len(lines)} lines cut;")
    assert kept[6:] == lines[-20:]
    assert result.cut


def test_foreign_unknown_tool_short_text_is_whole() -> None:
    name, args, outcome, text = foreign("cc_opus_ask_user")
    result = compress(name, args, outcome)
    assert json.loads(result.text)["data"] == {"text": text}
    assert not result.cut
