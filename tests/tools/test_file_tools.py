import os
from dataclasses import replace
from pathlib import Path

import pytest

from contextengine.toolkit.base import ToolOutcome
from contextengine.tools.context import ToolContext
from contextengine.tools.file_search import GREP_MAX_MATCHES
from contextengine.tools.files import format_mtime


def lines_of(out: ToolOutcome) -> str:
    """A file_read text without its mtime line."""
    body, _, mtime = out.text.rpartition("\n\n[mtime ")
    assert mtime.endswith("]")
    return body


# --- file_read ---------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(root: Path, run) -> None:
    (root / "a.txt").write_text("alpha\nbeta\ngamma\n")
    out = run("file_read", path="a.txt")
    assert out.status == "success"
    assert out.kind == "file"
    mtime = format_mtime((root / "a.txt").stat().st_mtime_ns)
    assert out.text == f"1\talpha\n2\tbeta\n3\tgamma\n\n[mtime {mtime}]"
    assert out.data["path"] == "a.txt"
    assert (out.data["start_line"], out.data["end_line"], out.data["total_lines"]) == (1, 3, 3)
    assert out.data["mtime"] == (root / "a.txt").stat().st_mtime_ns


def test_read_line_range_is_inclusive_and_clamped(root: Path, run) -> None:
    (root / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    out = run("file_read", path="a.txt", start_line=3, end_line=4)
    assert lines_of(out) == "3\tl3\n4\tl4"
    out = run("file_read", path="a.txt", start_line=9, end_line=50)
    assert lines_of(out) == " 9\tl9\n10\tl10"
    assert out.data["end_line"] == 10


def test_read_range_errors(root: Path, run) -> None:
    (root / "a.txt").write_text("one\ntwo\n")
    past = run("file_read", path="a.txt", start_line=5)
    assert past.error.code == "invalid_arguments"
    assert "past the end of a.txt (2 lines)" in past.error.message
    backwards = run("file_read", path="a.txt", start_line=2, end_line=1)
    assert backwards.error.code == "invalid_arguments"
    assert "end_line (1) is before start_line (2)" in backwards.error.message


def test_read_keeps_carriage_returns_and_unicode(root: Path, run) -> None:
    (root / "w.txt").write_bytes("größe\r\nzwei\r\n".encode())
    assert lines_of(run("file_read", path="w.txt")) == "1\tgröße\r\n2\tzwei\r"


def test_read_empty_file(root: Path, run) -> None:
    (root / "e.txt").write_text("")
    out = run("file_read", path="e.txt")
    assert out.status == "success"
    assert out.data["total_lines"] == 0
    assert "empty" in out.text


def test_read_refusals(root: Path, run) -> None:
    (root / "d").mkdir()
    (root / "bin.dat").write_bytes(b"\x7fELF\x00\x01\x02")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    assert run("file_read", path="missing.txt").error.code == "not_found"
    assert run("file_read", path="d").error.code == "is_a_directory"
    binary = run("file_read", path="bin.dat")
    assert binary.error.code == "binary_file"
    assert "bin.dat is a binary file" in binary.error.message
    assert run("file_read", path="latin.txt").error.code == "binary_file"
    outside = run("file_read", path="../../etc/passwd")
    assert outside.error.code == "outside_workspace"
    assert "outside the workspace" in outside.error.message


def test_read_output_cap_cuts_at_a_line_with_a_pointer(root: Path, ctx: ToolContext, run) -> None:
    run.ctx = replace(run.ctx, max_output_bytes=60)
    (root / "a.txt").write_text("".join(f"line number {i}\n" for i in range(1, 21)))
    out = run("file_read", path="a.txt")
    assert out.data["end_line"] < 20
    assert f"read on with start_line={out.data['end_line'] + 1}" in out.text


def _bump_mtime(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_reread_after_external_change_notes_it_once(root: Path, run) -> None:
    target = root / "a.txt"
    target.write_text("v1\n")
    assert "modified externally" not in run("file_read", path="a.txt").text
    target.write_text("v2\n")
    _bump_mtime(target)
    again = run("file_read", path="a.txt")
    mtime = format_mtime(target.stat().st_mtime_ns)
    assert again.text.endswith(f"\n\n[mtime {mtime}]\n\nNote: a.txt was modified externally.")
    assert again.data["modified_externally"] is True
    assert "modified externally" not in run("file_read", path="a.txt").text


def test_own_write_and_edit_are_not_external_changes(root: Path, run) -> None:
    (root / "a.txt").write_text("v1\n")
    run("file_read", path="a.txt")
    assert run("file_write", path="a.txt", content="v2\n").status == "success"
    assert "modified externally" not in run("file_read", path="a.txt").text
    assert run("file_edit", path="a.txt", old_text="v2", new_text="v3").status == "success"
    out = run("file_read", path="a.txt")
    assert "modified externally" not in out.text
    assert lines_of(out) == "1\tv3"


# --- file_write --------------------------------------------------------------


def test_write_creates_parents_then_overwrites(root: Path, run) -> None:
    created = run("file_write", path="deep/er/new.txt", content="a\nb\n")
    assert created.status == "success"
    assert created.data == {"path": "deep/er/new.txt", "action": "created", "lines": 2, "bytes": 4}
    assert (root / "deep/er/new.txt").read_text() == "a\nb\n"
    over = run("file_write", path="deep/er/new.txt", content="ü")
    assert over.data["action"] == "overwritten"
    assert over.data["bytes"] == 2
    assert "Overwrote deep/er/new.txt" in over.text


def test_write_is_byte_exact(root: Path, run) -> None:
    content = "line\r\n\ttab  \nno newline at end ✓"
    run("file_write", path="x.txt", content=content)
    assert (root / "x.txt").read_bytes() == content.encode()


def test_write_refusals(root: Path, run) -> None:
    (root / "d").mkdir()
    assert run("file_write", path="d", content="x").error.code == "is_a_directory"
    assert run("file_write", path="../escape.txt", content="x").error.code == "outside_workspace"
    assert not (root.parent / "escape.txt").exists()
    (root / "afile").write_text("")
    blocked = run("file_write", path="afile/child.txt", content="x")
    assert blocked.error.code == "not_a_directory"


# --- file_edit ---------------------------------------------------------------


def test_edit_replaces_once_and_reports_ranges_and_snippet(root: Path, run) -> None:
    (root / "m.py").write_text("".join(f"x{i} = {i}\n" for i in range(1, 21)))
    out = run("file_edit", path="m.py", old_text="x10 = 10\n", new_text="x10 = 'ten'\nextra = 1\n")
    assert out.status == "success"
    assert out.data["changed_lines"] == [[10, 11]]
    assert out.data["replacements"] == 1
    snippet = out.data["snippets"][0]
    assert snippet == " 9\tx9 = 9\n10\tx10 = 'ten'\n11\textra = 1\n12\tx11 = 11"
    assert "changed lines 10-11" in out.text
    assert (root / "m.py").read_text().count("\n") == 21


def test_edit_no_match_and_ambiguous(root: Path, run) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\na = 1\nc = 3\na = 1\n")
    missing = run("file_edit", path="m.py", old_text="zzz", new_text="y")
    assert missing.error.code == "no_match"
    assert "not found in m.py" in missing.error.message
    ambiguous = run("file_edit", path="m.py", old_text="a = 1", new_text="a = 9")
    assert ambiguous.error.code == "ambiguous_match"
    assert "occurs 3 times" in ambiguous.error.message
    assert "lines 1, 3, 5" in ambiguous.error.message
    assert (root / "m.py").read_text() == "a = 1\nb = 2\na = 1\nc = 3\na = 1\n"


def test_edit_replace_all(root: Path, run) -> None:
    (root / "m.py").write_text("a = 1\nb = 2\na = 1\n")
    out = run("file_edit", path="m.py", old_text="a = 1", new_text="a = 9", replace_all=True)
    assert out.data["replacements"] == 2
    assert out.data["changed_lines"] == [[1, 1], [3, 3]]
    assert (root / "m.py").read_text() == "a = 9\nb = 2\na = 9\n"


def test_multi_edit_applies_in_order(root: Path, run) -> None:
    (root / "m.py").write_text("one\ntwo\nthree\n")
    edits = [
        {"old_text": "one", "new_text": "uno"},
        {"old_text": "uno\ntwo", "new_text": "uno\ndos"},
    ]
    out = run("file_edit", path="m.py", edits=edits)
    assert out.status == "success", out.text
    assert out.data["edits"] == 2
    assert (root / "m.py").read_text() == "uno\ndos\nthree\n"


def test_multi_edit_is_all_or_nothing(root: Path, run) -> None:
    (root / "m.py").write_text("one\ntwo\n")
    edits = [{"old_text": "one", "new_text": "uno"}, {"old_text": "absent", "new_text": "x"}]
    out = run("file_edit", path="m.py", edits=edits)
    assert out.error.code == "no_match"
    assert out.error.message.startswith("edit 2 of 2:")
    assert (root / "m.py").read_text() == "one\ntwo\n"


@pytest.mark.parametrize(
    "arguments",
    [
        {"path": "m.py", "old_text": "a"},
        {
            "path": "m.py",
            "old_text": "a",
            "new_text": "b",
            "edits": [{"old_text": "a", "new_text": "c"}],
        },
        {"path": "m.py", "edits": []},
        {"path": "m.py", "old_text": "same", "new_text": "same"},
        {"path": "m.py", "old_text": "", "new_text": "x"},
        {"path": "m.py", "edits": [{"old_text": "", "new_text": "x"}]},
        {"path": "m.py", "old_text": "a", "new_text": "b", "colour": "red"},
    ],
)
def test_edit_argument_forms_are_validated(root: Path, run, arguments: dict) -> None:
    (root / "m.py").write_text("a\n")
    out = run("file_edit", **arguments)
    assert out.error.code == "invalid_arguments"
    assert (root / "m.py").read_text() == "a\n"


def test_edit_keeps_crlf(root: Path, run) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\n")
    run("file_edit", path="w.txt", old_text="b", new_text="c")
    assert (root / "w.txt").read_bytes() == b"a\r\nc\r\n"


def test_edit_refusals(root: Path, run) -> None:
    (root / "d").mkdir()
    assert run("file_edit", path="nope.py", old_text="a", new_text="b").error.code == "not_found"
    assert run("file_edit", path="d", old_text="a", new_text="b").error.code == "is_a_directory"


# --- file_ls -----------------------------------------------------------------


def test_ls_sorted_with_types_sizes_counts(root: Path, run) -> None:
    (root / "b.txt").write_text("12345")
    (root / "a_dir").mkdir()
    (root / "c_link").symlink_to("b.txt")
    out = run("file_ls")
    assert out.status == "success"
    assert out.data["dir"] == "."
    assert out.data["counts"] == {"dirs": 1, "files": 1, "links": 1}
    assert out.data["entries"] == [
        {"name": "a_dir", "type": "dir", "size": None},
        {"name": "b.txt", "type": "file", "size": 5},
        {"name": "c_link", "type": "link", "size": None, "target": "b.txt"},
    ]
    assert out.text.splitlines()[1:] == ["a_dir/", "b.txt  (5 bytes)", "c_link -> b.txt"]


def test_ls_refusals(root: Path, run) -> None:
    (root / "f.txt").write_text("")
    assert run("file_ls", path="f.txt").error.code == "not_a_directory"
    assert run("file_ls", path="nope").error.code == "not_found"
    assert run("file_ls", path="..").error.code == "outside_workspace"


# --- file_glob ---------------------------------------------------------------


def test_glob_recursive_sorted_and_confined(root: Path, run) -> None:
    for rel in ("z.py", "src/b.py", "src/a.py", "src/deep/c.py", "src/notes.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text("")
    (root / "escape").symlink_to(outside)
    out = run("file_glob", pattern="**/*.py")
    assert out.data["matches"] == ["src/a.py", "src/b.py", "src/deep/c.py", "z.py"]
    assert out.data["count"] == 4
    assert out.text.splitlines() == out.data["matches"]
    assert run("file_glob", pattern="../outside/*").error.code == "outside_workspace"
    assert run("file_glob", pattern="escape/*").data["matches"] == []
    assert run("file_glob", pattern="*.nothing").text == "No paths match '*.nothing'."


def test_glob_bad_patterns(run) -> None:
    assert run("file_glob", pattern="/etc/*").error.code == "invalid_arguments"
    assert run("file_glob", pattern="").error.code == "invalid_arguments"


# --- file_grep ---------------------------------------------------------------


def test_grep_sorted_results_and_skips(root: Path, run) -> None:
    (root / "b.py").write_text("x = 1\ndef foo():\n    foo()\n")
    (root / "a").mkdir()
    (root / "a" / "z.py").write_text("foo = 2\n")
    for skipped in (".git", "node_modules", "__pycache__", ".contextengine"):
        (root / skipped).mkdir()
        (root / skipped / "f.py").write_text("foo\n")
    (root / "blob.bin").write_bytes(b"foo\x00bar")
    out = run("file_grep", pattern=r"foo\b")
    assert out.data["matches"] == ["a/z.py:1:foo = 2", "b.py:2:def foo():", "b.py:3:    foo()"]
    assert (out.data["count"], out.data["files"], out.data["truncated"]) == (3, 2, False)
    assert out.text.splitlines() == out.data["matches"]


def test_grep_one_file_and_no_match(root: Path, run) -> None:
    (root / "a.py").write_text("alpha\nbeta\n")
    (root / "b.py").write_text("beta\n")
    assert run("file_grep", pattern="beta", path="a.py").data["matches"] == ["a.py:2:beta"]
    none = run("file_grep", pattern="gamma")
    assert none.status == "success" and none.data["count"] == 0
    assert "No matches" in none.text


def test_grep_caps_matches(root: Path, run) -> None:
    (root / "big.txt").write_text("hit\n" * (GREP_MAX_MATCHES + 5))
    out = run("file_grep", pattern="hit")
    assert out.data["count"] == GREP_MAX_MATCHES
    assert out.data["truncated"] is True
    assert f"stopped at {GREP_MAX_MATCHES} matches" in out.text


def test_grep_refusals(root: Path, run) -> None:
    bad = run("file_grep", pattern="(unclosed")
    assert bad.error.code == "invalid_arguments"
    assert "invalid regular expression" in bad.error.message
    assert run("file_grep", pattern="x", path="missing").error.code == "not_found"
    assert run("file_grep", pattern="x", path="/etc").error.code == "outside_workspace"
