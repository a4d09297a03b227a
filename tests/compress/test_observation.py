import json
from pathlib import Path
from typing import Any

import pytest

from contextengine.compress.compressors import compress_observation
from contextengine.compress.externalize import CompressedRef, Externalizer
from contextengine.compress.observation import (
    REF_VIEW_MAX_SHARE,
    ObservationProcessor,
    ProcessedObservation,
    absolute_forms,
    maximal,
    names_in,
    working_dir,
)
from contextengine.toolkit.base import ToolOutcome
from contextengine.toolkit.workspace import Workspace
from contextengine.tools.context import ToolContext
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall


class Harness:
    """A workspace with the session folder inside it, the tools and a processor factory."""

    def __init__(self, root: Path, session_dir: Path) -> None:
        self.session_dir = session_dir
        self.workspace = Workspace(
            root, session_dir=session_dir, session_access={"artifacts": "read"}
        )
        self.ctx = ToolContext(self.workspace)
        self.toolset = default_toolset()
        self.externalizer = Externalizer(session_dir / "artifacts", self.workspace.display)

    def run(self, name: str, **arguments: Any) -> tuple[dict[str, Any], ToolOutcome]:
        call = ToolCall("c", name, json.dumps(arguments))
        return arguments, self.toolset.execute(call, self.ctx)

    def processor(self, mode: str = "compressed", externalize: bool = True) -> ObservationProcessor:
        return ObservationProcessor(
            self.externalizer,
            mode=mode,  # type: ignore[arg-type]
            externalize=externalize,
            traits=self.toolset.traits,
        )

    def artifacts(self) -> list[str]:
        folder = self.session_dir / "artifacts"
        return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    root.mkdir()
    return Harness(root, root / ".contextengine" / "sessions" / "o" / "t" / "ws" / "s1")


BIG = "python3 -c \"import sys; [print(f'row {i:05d} ' + 'x' * 40) for i in range(1100)]\""


def _ref_of(live: str) -> CompressedRef:
    return CompressedRef.from_json(live.split("\n", 1)[0])


def test_small_output_is_kept_verbatim_and_shown_once(h: Harness) -> None:
    """Nothing to cut: the verbatim text is smaller than its JSON form, so history keeps it
    and the model sees it once (history == live: no live duplicate)."""
    args, out = h.run("shell_exec", command="echo hello")
    assert len(compress_observation("shell_exec", args, out, compressor="shell")) > len(out.text)
    for mode in ("compressed", "full"):
        obs = h.processor(mode).process(3, "shell_exec", args, out)
        assert obs == ProcessedObservation(
            history=out.text, live=out.text, full_ref=None, original_length=len(out.text)
        )
    assert h.artifacts() == []


def test_50kb_output_is_externalized_and_recovered_exactly(h: Harness) -> None:
    args, out = h.run("shell_exec", command=BIG)
    assert len(out.text) > 50_000
    obs = h.processor().process(7, "shell_exec", args, out)
    assert obs.full_ref == "artifacts/7-shell_exec.txt"
    assert obs.original_length == len(out.text)
    ref = _ref_of(obs.live)
    path = ".contextengine/sessions/o/t/ws/s1/artifacts/7-shell_exec.txt"
    assert ref.path == path
    assert (ref.type, ref.original_length, ref.recoverable) == ("other", len(out.text), True)
    assert ref.title == f"shell_exec {BIG}"[:120]
    assert "file_read" in obs.live and len(obs.live) < 3000
    assert h.externalizer.recover(ref) == out.text
    history = json.loads(obs.history)
    assert f"recoverable from {path}]" in history["data"]["stdout"]
    assert len(obs.history) < 2000
    read = h.toolset.execute(
        ToolCall("r", "file_read", json.dumps({"path": ref.path, "start_line": 2, "end_line": 3})),
        h.ctx,
    )
    numbered = "2\trow 00001 " + "x" * 40 + "\n3\trow 00002 " + "x" * 40
    assert read.text.startswith(numbered + "\n\n[mtime ")


def test_cut_markers_name_the_artifact_by_the_short_path_and_the_ref_keeps_the_full_one(
    h: Harness,
) -> None:
    h.externalizer = Externalizer(
        h.session_dir / "artifacts", h.workspace.display, h.workspace.artifact_path
    )
    args, out = h.run("shell_exec", command=BIG)
    obs = h.processor().process(7, "shell_exec", args, out)
    shown = ".contextengine/artifacts/7-shell_exec.txt"
    assert f"recoverable from {shown}]" in json.loads(obs.history)["data"]["stdout"]
    assert h.workspace.resolve(shown) == h.session_dir / "artifacts" / "7-shell_exec.txt"
    assert _ref_of(obs.live).path == ".contextengine/sessions/o/t/ws/s1/artifacts/7-shell_exec.txt"


def test_cut_history_saves_the_full_text_even_under_the_threshold(h: Harness) -> None:
    for i in range(30):
        (h.workspace.root / f"f{i:02d}.txt").write_text("")
    args, out = h.run("file_ls")
    obs = h.processor().process(2, "file_ls", args, out)
    assert len(out.text) < 3000
    assert obs.live == out.text
    assert obs.full_ref == "artifacts/2-file_ls.txt"
    assert "artifacts/2-file_ls.txt]" in json.loads(obs.history)["data"]["more"]
    assert (h.session_dir / obs.full_ref).read_text() == out.text


def test_externalize_off_keeps_live_full(h: Harness) -> None:
    args, out = h.run("shell_exec", command=BIG)
    obs = h.processor(externalize=False).process(1, "shell_exec", args, out)
    assert obs.live == out.text
    assert obs.full_ref == "artifacts/1-shell_exec.txt"
    assert (h.session_dir / obs.full_ref).read_text() == out.text


def test_full_mode_keeps_the_full_text_or_the_ref(h: Harness) -> None:
    args, small = h.run("shell_exec", command="echo hi")
    obs = h.processor("full").process(1, "shell_exec", args, small)
    assert (obs.history, obs.live, obs.full_ref) == (small.text, small.text, None)
    args, big = h.run("shell_exec", command=BIG)
    obs = h.processor("full").process(2, "shell_exec", args, big)
    assert obs.history == obs.live
    assert h.externalizer.recover(_ref_of(obs.history)) == big.text
    assert obs.full_ref == "artifacts/2-shell_exec.txt"


def test_full_mode_saves_nothing_for_an_empty_output(h: Harness) -> None:
    obs = h.processor("full").process(3, "shell_exec", {"command": "true"}, ToolOutcome.ok(""))
    assert (obs.history, obs.full_ref) == ("", None)
    assert h.artifacts() == []


def test_full_mode_without_externalizing_is_pure_append(h: Harness) -> None:
    args, big = h.run("shell_exec", command=BIG)
    obs = h.processor("full", externalize=False).process(2, "shell_exec", args, big)
    assert (obs.history, obs.live, obs.full_ref) == (big.text, big.text, None)
    assert h.artifacts() == []


def test_round_scratchpad_mode_compresses_history_like_compressed(h: Harness) -> None:
    args, out = h.run("shell_exec", command="echo hi")
    compressed = h.processor("compressed").process(1, "shell_exec", args, out)
    scratch = h.processor("round_scratchpad").process(1, "shell_exec", args, out)
    assert scratch == compressed


@pytest.mark.parametrize("mode", ["compressed", "full"])
def test_errors_stay_verbatim_around_huge_output(h: Harness, mode: str) -> None:
    script = (
        "for i in range(3000): print('noise', i)\n"
        "def deep(n):\n    return deep(n - 1) if n else {}['missing']\n"
        "deep(30)\n"
    )
    (h.workspace.root / "s.py").write_text(script)
    args, out = h.run("shell_exec", command="python3 s.py")
    assert out.error is not None and len(out.text) > 20_000
    message = out.error.message
    assert "Traceback (most recent call last):" in message and "KeyError: 'missing'" in message
    obs = h.processor(mode).process(4, "shell_exec", args, out)
    assert message in obs.live
    if mode == "compressed":
        assert json.loads(obs.history)["error"]["message"] == message
    else:
        assert message in obs.history
    assert h.externalizer.recover(_ref_of(obs.live)) == out.text


def test_foreign_error_without_code_keeps_its_traceback_when_externalized(h: Harness) -> None:
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/testbed/reproduce_issue.py", line 4, in <module>\n'
        "    expr = kernS(text)\n"
        "UnboundLocalError: local variable 'kern' referenced before assignment\n"
    )
    text = "".join(f"log line {i}\n" for i in range(400)) + traceback
    obs = h.processor().process(5, "bash", {"command": "python x.py"}, ToolOutcome("error", text))
    assert traceback.rstrip("\n") in obs.live
    assert traceback.rstrip("\n") in json.loads(obs.history)["data"]["output"]


def test_a_failure_ending_in_long_lines_is_saved_with_a_bounded_tail(h: Harness) -> None:
    lines = [json.dumps({"uuid": f"u{i}", "text": "w" * 2000}) for i in range(20)]
    text = "\n".join(lines) + "\nFile content (85812 tokens) exceeds maximum allowed tokens."
    obs = h.processor("full").process(
        3, "Read", {"file_path": "/t.jsonl"}, ToolOutcome("error", text)
    )
    assert obs.full_ref is not None and len(obs.history) < 6000, "not kept whole for good"
    error = obs.history.split("<error>\n", 1)[1]
    assert error.startswith("…") and error.endswith("exceeds maximum allowed tokens.\n</error>")
    assert h.externalizer.recover(_ref_of(obs.live)) == text


def test_full_mode_fits_the_index_into_its_share_of_the_text(h: Harness) -> None:
    names = " ".join(f"module_{i}.handler_{i}" for i in range(200))
    assert 3000 < len(names) < 10_000, "just over the threshold, and all names"
    obs = h.processor("full").process(1, "Bash", {"command": "r"}, ToolOutcome.ok(names))
    assert obs.full_ref is not None and obs.history == obs.live
    assert len(obs.history) <= len(names) * REF_VIEW_MAX_SHARE
    index = obs.history.split("Names in the full output: ", 1)[1]
    listed, more = index.rsplit(" (and ", 1)
    preview = _ref_of(obs.history).preview
    fresh = [n for n in names.split() if n not in preview]
    assert listed.split(" ") == fresh[: len(listed.split(" "))], "the first names, in order"
    assert more == f"{len(fresh) - len(listed.split(' '))} more)"


def test_full_mode_keeps_a_text_whose_ref_would_be_about_as_long(h: Harness) -> None:
    text = "".join(f"E{i:03d} " + "failed: value out of range " * 9 + "\n" for i in range(14))
    assert 3000 < len(text) < 4000, "just over the threshold"
    failed = ToolOutcome("error", text)
    obs = h.processor("full").process(1, "Bash", {"command": "r"}, failed)
    assert (obs.history, obs.live, obs.full_ref) == (text, text, None), "its tail is the text"


def test_the_index_holds_uncommon_words_after_code_names_and_common_ones_last() -> None:
    text = "Call getattr on the tokenizer; see parse_args and the approach below. getattr again."
    assert names_in(text) == ["parse_args", "getattr", "tokenizer", "approach"]


def test_a_name_keeps_its_trailing_slash_and_its_full_stop() -> None:
    text = "See https://example.org/docs/guide/ and the build_dir/. Then run setup_tool."
    assert names_in(text) == ["example.org/docs/guide/", "build_dir/.", "setup_tool."]


def test_a_full_stop_does_not_make_a_word_code_and_one_form_holds_both() -> None:
    names = names_in("See the results. Then call parse_args. The results hold.")
    assert names == ["parse_args.", "results.", "results"], "a word with a stop is no code"
    assert maximal(names, 4) == ["parse_args.", "results."], "the form with the stop holds both"


def test_foreign_read_counts_as_a_file(h: Harness) -> None:
    text = "".join(f"{i:>6}\tsome code here\n" for i in range(180))
    assert 3000 < len(text) < 5000
    read = h.processor().process(1, "Read", {"file_path": "/x.py"}, ToolOutcome.ok(text))
    assert read.live == text
    bash = h.processor().process(2, "Bash", {"command": "cat x.py"}, ToolOutcome.ok(text))
    assert _ref_of(bash.live).type == "other"


def test_session_outside_the_workspace_is_addressed_absolutely(tmp_path: Path) -> None:
    root, session = tmp_path / "ws", tmp_path / "sessions" / "s9"
    root.mkdir()
    h = Harness(root, session)
    args, out = h.run("shell_exec", command=BIG)
    obs = h.processor().process(1, "shell_exec", args, out)
    ref = _ref_of(obs.live)
    assert ref.path == str(session / "artifacts" / "1-shell_exec.txt")
    read = h.toolset.execute(ToolCall("r", "file_read", json.dumps({"path": ref.path})), h.ctx)
    assert read.status == "success"
    assert read.data["total_lines"] == out.text.count("\n") + 1


def test_the_index_leaves_out_names_inside_longer_listed_ones(h: Harness) -> None:
    paths = [f"pkg/locale/lang_{i:03d}/LC_MESSAGES" for i in range(150)]
    listing = ("drwxr-xr-x 2 root root 4096 " + line for p in paths for line in (p, "LC_MESSAGES"))
    text = "\n".join([*(p.rsplit("/", 1)[0] for p in paths), *listing])
    obs = h.processor("full").process(1, "Bash", {"command": "ls -R"}, ToolOutcome.ok(text))
    index = obs.live.split("Names in the full output: ", 1)[1].split(" ")
    listed = [p for p in paths if p not in _ref_of(obs.live).preview]
    assert index == listed, "each directory and LC_MESSAGES are inside a listed path"
    assert all(name in obs.live for name in names_in(text)), "every name is still findable"


def test_maximal_keeps_order_and_only_checks_its_window() -> None:
    assert maximal(["ab_cd", "ab_cd_ef", "zz_top", "ab_cd"[:4]], 10) == ["ab_cd_ef", "zz_top"]
    assert maximal(["x_y_z", "x_y_z_w", "x_y"], 2) == ["x_y_z_w", "x_y"]


PAGES = [f"src/pages/Page{i:02d}/View{i:02d}.tsx" for i in range(30)]
ROWS = "\n".join(f"{p}  {'-+' * 60}" for p in PAGES)


@pytest.mark.parametrize(
    "arguments",
    [
        {"command": ["bash", "-lc", "rg --files"], "workdir": "/Users/me/proj"},
        {"command": "cd /Users/me/proj && rg --files"},
    ],
)
def test_a_listing_under_a_known_folder_indexes_both_path_forms(
    h: Harness, arguments: dict[str, Any]
) -> None:
    assert len(ROWS) > 3000, "over the threshold: shown as a ref with its index"
    obs = h.processor("full").process(1, "shell", arguments, ToolOutcome.ok(ROWS))
    assert obs.full_ref is not None
    preview = _ref_of(obs.live).preview
    indexed = [p for p in PAGES if p not in preview]
    assert indexed, "some paths are only in the index"
    for path in indexed:
        assert f"/Users/me/proj/{path}" in obs.live, "the form an agent types later"
        assert path in obs.live, "and the form the listing shows"
    plain = h.processor("full").process(2, "shell", {"command": "rg --files"}, ToolOutcome.ok(ROWS))
    assert "/Users/me/proj" not in plain.live and indexed[0] in plain.live


def test_an_absolute_path_in_the_output_holds_its_relative_form() -> None:
    names = names_in("see /Users/me/proj/src/app.py and src/app.py")
    assert maximal(names, 4) == ["Users/me/proj/src/app.py"], "one name holds both forms"


def test_absolute_forms_take_only_the_room_given_and_skip_non_paths() -> None:
    names = ["src/a.py", "setup.cfg", "github.com/x/y", "os.path.join", "Users/me/p/b.py", "plain"]
    assert absolute_forms(names, "/Users/me/p", 1000) == [
        "/Users/me/p/src/a.py",
        "/Users/me/p/setup.cfg",
        "github.com/x/y",
        "os.path.join",
        "Users/me/p/b.py",
        "plain",
    ]
    assert absolute_forms(names, "/Users/me/p", 15) == ["/Users/me/p/src/a.py", *names[1:]]
    assert working_dir({"command": "ls", "cwd": "relative/dir"}) is None
    assert working_dir({"command": "cd /srv/app; make"}) == "/srv/app"


def _parallel_listing() -> tuple[str, list[str]]:
    """An ``ls -R`` of a tree with 300 parallel locale folders, then test folders, then short names."""
    locales = [f"/repo/proj/conf/locale/l{i:03d}/LC_MESSAGES" for i in range(300)]
    tests = [
        f"/repo/proj/tests/case_{name}_models" for name in ("unmanaged", "proxy", "nonimported")
    ]
    lines = [
        line for path in [*locales, *tests] for line in (f"{path}:", "django.po  django.mo", "")
    ]
    return "\n".join([*lines, *["a.po  b.mo"] * 80]), tests  # the preview's tail: short names


def test_an_index_too_long_for_its_room_folds_parallel_paths_and_reaches_later_names(
    h: Harness,
) -> None:
    text, tests = _parallel_listing()
    obs = h.processor().process(1, "Bash", {"command": "ls -R /repo"}, ToolOutcome.ok(text))
    index = obs.live.split("Names in the full output: ", 1)[1]
    assert "repo/proj/conf/locale/{l005,l006," in index and "l299}/LC_MESSAGES" in index
    assert all(name.split("_")[1] in index for name in tests), "the names after them fit too"
    assert " more)" not in index
