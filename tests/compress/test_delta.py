"""A result that repeats an earlier one goes into history as its difference from it."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from contextengine import Config, ScriptedProvider
from contextengine.agent.loop import Agent
from contextengine.compress.delta import (
    DELTA_MIN_CHARS,
    ShownResult,
    closest,
    diff_hunks,
    shown_results,
)
from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import SAME_FAILURE, ObservationProcessor
from contextengine.session.entries import (
    AssistantEntry,
    PrunedCall,
    PrunedResult,
    PruneEntry,
    ToolCallRecord,
    ToolResultEntry,
)
from contextengine.session.session import Session
from contextengine.toolkit.base import ToolOutcome
from contextengine.tools.registry import default_toolset
from contextengine.types import ToolCall

LINES = [f"line {i:02d}: the value of item_{i} is {i * 7}\n" for i in range(30)]
TEXT = "".join(LINES)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def patched(base: str, hunks: str) -> list[str]:
    """``base``'s lines with the hunks of ``diff_hunks`` applied (a reader's view of them)."""
    old = base.splitlines()
    out: list[str] = []
    at = 0
    for line in hunks.splitlines():
        if match := _HUNK.match(line):
            start, count = int(match.group(1)), int(match.group(2) or 1)
            upto = start if count == 0 else start - 1  # a pure insertion comes after ``start``
            out += old[at:upto]
            at = upto + count
        elif line.startswith("+"):
            out.append(line[1:])
    return out + old[at:]


@given(
    st.lists(st.sampled_from(["a", "b", "c", "dd", ""]), max_size=30),
    st.lists(st.sampled_from(["a", "b", "c", "dd", "e", ""]), max_size=30),
)
def test_the_hunks_turn_the_base_into_the_text(base: list[str], text: list[str]) -> None:
    before, after = "\n".join(base), "\n".join(text)
    assert patched(before, diff_hunks(before, after)) == after.splitlines()


def test_closest_is_the_result_holding_most_of_the_text() -> None:
    changed = TEXT.replace("item_5 is 35", "item_5 is 36")
    half = ShownResult(1, "shell_exec", "".join(LINES[:10]), back=2)
    most = ShownResult(2, "shell_exec", TEXT, back=1)
    assert closest(changed, [most, half]) == most
    assert closest(changed, [half]) is None  # a third of its lines: not enough
    assert closest(changed[: DELTA_MIN_CHARS - 1], [most]) is None  # too short to bother


def test_shown_results_skip_results_not_shown_whole(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "s")
    whole = session.append(
        ToolResultEntry(call_id="a", tool_name="t", status="success", content=TEXT)
    )
    session.append(
        ToolResultEntry(call_id="b", tool_name="t", status="success", content="ref", full_ref="x")
    )
    pruned = session.append(
        ToolResultEntry(call_id="c", tool_name="t", status="success", content=TEXT)
    )
    session.append(ToolResultEntry(call_id="d", tool_name="t", status="error", content="new"))
    assert [(r.index, r.back) for r in shown_results(session)] == [(3, 1), (2, 2), (0, 4)]
    assert [r.failed for r in shown_results(session)] == [True, False, False]
    stub = PrunedResult(index=pruned.index, call_id="c", tool_name="t", content="s", full_ref="y")
    session.append(PruneEntry(results=(stub,)))
    assert [(r.index, r.back) for r in shown_results(session)] == [(3, 1), (0, 4)]
    assert shown_results(session, most=1)[0].index == 3
    assert whole.index == 0


def test_shown_results_carry_the_call_as_made_even_when_its_reply_was_pruned(
    tmp_path: Path,
) -> None:
    session = Session.create(tmp_path / "s")
    command = '{"command":"cat data.txt"}'
    call = ToolCallRecord(id="c1", name="shell_exec", arguments_json=command)
    reply = session.append(AssistantEntry(text="Reading.", tool_calls=(call,)))
    session.append(
        ToolResultEntry(call_id="c1", tool_name="shell_exec", status="success", content=TEXT)
    )
    stubbed = call.model_copy(update={"arguments_json": '{"command":"[pruned]"}'})
    pruned = AssistantEntry(text="Reading.", tool_calls=(stubbed,))
    session.append(
        PruneEntry(results=(), calls=(PrunedCall(index=reply.index, assistant=pruned, refs=()),))
    )
    (shown,) = shown_results(session)
    assert shown.call is not None and shown.call.arguments() == {"command": "cat data.txt"}


def test_a_difference_names_what_ran_from_history_alone(tmp_path: Path) -> None:
    call = ToolCall("c1", "shell_exec", '{"command":"cat data.txt"}')
    base = ShownResult(0, "shell_exec", TEXT, back=1, call=call)
    changed = ToolOutcome.ok(TEXT.replace("item_5 is 35", "item_5 is 36"))
    done = processor(tmp_path, [base]).process(
        5, "shell_exec", {"command": "cat data.txt"}, changed
    )
    assert done.history.startswith("Same output as the previous result (shell_exec cat data.txt)")


def processor(tmp_path: Path, shown: list[ShownResult]) -> ObservationProcessor:
    externalizer = Externalizer(tmp_path / "artifacts", lambda p: p.name)
    toolset = default_toolset()
    return ObservationProcessor(
        externalizer, mode="full", externalize=True, traits=toolset.traits, shown=lambda: shown
    )


def test_a_failure_told_as_a_difference_keeps_its_message(tmp_path: Path) -> None:
    long = TEXT * 4  # its last 20 lines, the message kept verbatim, fit in its share of it
    base = ShownResult(0, "shell_exec", long + "Error: boom\n", back=1)
    failed = ToolOutcome("error", long + "Error: boom again\n")
    done = processor(tmp_path, [base]).process(5, "shell_exec", {"command": "run"}, failed)
    assert done.history.startswith("Same output as the previous result (shell_exec) except")
    assert "<error>\n" in done.history and "Error: boom again\n</error>" in done.history
    assert (tmp_path / "artifacts" / "5-shell_exec.txt").read_text() == failed.text


def test_a_failure_after_a_failure_points_to_its_error_instead_of_repeating_it(
    tmp_path: Path,
) -> None:
    long = TEXT * 4
    base = ShownResult(0, "shell_exec", long + "Error: boom\nin 0.21 s\n", back=2, failed=True)
    failed = ToolOutcome("error", long + "Error: boom\nin 0.27 s\n")
    done = processor(tmp_path, [base]).process(5, "shell_exec", {"command": "run"}, failed)
    assert done.history.endswith(f"-in 0.21 s\n+in 0.27 s\n{SAME_FAILURE}")
    assert "<error>" not in done.history
    assert (tmp_path / "artifacts" / "5-shell_exec.txt").read_text() == failed.text


def test_a_difference_longer_than_its_share_of_the_text_is_not_used(tmp_path: Path) -> None:
    base = ShownResult(0, "shell_exec", TEXT, back=1)
    other = "".join(line.replace("value", "worth") for line in LINES[:16]) + "".join(LINES[16:])
    done = processor(tmp_path, [base]).process(5, "shell_exec", {}, ToolOutcome.ok(other))
    assert done.history == other and done.full_ref is None


def _rerun_script() -> list[dict]:
    def call(name: str, **arguments: object) -> dict:
        return {"content": "Working.", "tool_calls": [{"name": name, "arguments": arguments}]}

    return [
        call("file_write", path="data.txt", content=TEXT),
        call("shell_exec", command="cat data.txt"),
        call("file_edit", path="data.txt", old_text="item_5 is 35", new_text="item_5 is 36"),
        call("shell_exec", command="cat data.txt"),
        {"content": "The value of item_5 is now 36; the rest is unchanged."},
    ]


def _results(
    tmp_path: Path, config: Config
) -> tuple[Agent, ScriptedProvider, list[ToolResultEntry]]:
    provider = ScriptedProvider(_rerun_script())
    agent = Agent(provider, tmp_path / "ws", config)
    agent.run("Change item 5 of data.txt to 36.")
    results = [r.entry for r in agent.session.records if isinstance(r.entry, ToolResultEntry)]
    return agent, provider, [r for r in results if r.tool_name == "shell_exec"]


def test_a_rerun_goes_into_history_as_its_difference(tmp_path: Path) -> None:
    agent, provider, (first, second) = _results(tmp_path, Config(sandbox=False))
    assert first.content.startswith(TEXT) and first.full_ref is None
    assert second.content.startswith(
        "Same output as the result 2 back (shell_exec cat data.txt) except these lines"
    )
    assert second.content.endswith(
        "@@ -6 +6 @@\n-line 05: the value of item_5 is 35\n+line 05: the value of item_5 is 36"
    )
    assert second.full_ref is not None
    saved = agent.session_dir / second.full_ref
    assert saved.read_text() == first.content.replace("item_5 is 35", "item_5 is 36")
    # the model is told where the whole text is, by the short path its file tools open
    shown = f".contextengine/artifacts/{saved.name}"
    assert f"(diff from it; saved at {shown})" in second.content
    assert agent.tool_context.workspace.resolve(shown) == saved
    last = provider.requests[-1].messages
    assert any(m.get("content", "").endswith("item_5 is 36") for m in last if m["role"] == "tool")


def test_a_command_failing_again_the_same_way_goes_in_as_its_difference(
    tmp_path: Path,
) -> None:
    def run(command: str) -> dict:
        return {
            "content": "Testing.",
            "tool_calls": [{"name": "shell_exec", "arguments": {"command": command}}],
        }

    failing = "cat data.txt; date +%N >&2; exit 3"
    provider = ScriptedProvider(
        [
            {
                "content": "Data.",
                "tool_calls": [
                    {"name": "file_write", "arguments": {"path": "data.txt", "content": TEXT}}
                ],
            },
            run(failing),
            run(failing),
            {"content": "It fails the same way twice."},
        ]
    )
    agent = Agent(provider, tmp_path / "ws", Config(sandbox=False))
    agent.run("Run the check twice.")
    first, second = [
        r.entry
        for r in agent.session.records
        if isinstance(r.entry, ToolResultEntry) and r.entry.tool_name == "shell_exec"
    ]
    assert first.status == second.status == "error"
    assert first.content.startswith(TEXT) and "[exit code 3]" in first.content
    assert second.content.startswith("Same output as the previous result (shell_exec cat data")
    assert second.content.endswith(SAME_FAILURE) and "<error" not in second.content
    assert second.full_ref is not None
    assert (agent.session_dir / second.full_ref).read_text().endswith("[exit code 3]")


def test_deltas_off_keeps_a_rerun_whole(tmp_path: Path) -> None:
    _, _, (_, second) = _results(tmp_path, Config(sandbox=False, deltas=False))
    assert second.content.startswith(TEXT.replace("item_5 is 35", "item_5 is 36"))
