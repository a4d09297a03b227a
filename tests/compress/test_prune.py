"""Cache-aware pruning (R7.8): when it fires, what it keeps, and that nothing is lost."""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from contextengine import Config
from contextengine.agent.parts import pruner_of
from contextengine.canonical import canonical_json
from contextengine.compress.externalize import Externalizer
from contextengine.compress.observation import ERROR_TAIL_CHARS, ERROR_TAIL_LINES
from contextengine.compress.prune import MAX_STUB_NAMES, Pruner, failure_kept, stub_text
from contextengine.context.builder import ContextBuilder
from contextengine.context.monitor import PrefixMonitor
from contextengine.prices import CachePolicy
from contextengine.session.entries import (
    AssistantEntry,
    PrunedCall,
    PrunedUser,
    PruneEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.session.render import RenderStyle
from contextengine.session.session import Session
from contextengine.toolkit.workspace import Workspace


def output(k: int, lines: int = 120) -> str:
    return "\n".join(
        f"def helper_{k}_{i}(value_{i}): return compute_{k}_{i}()" for i in range(lines)
    )


def session_with_steps(
    folder: Path, sizes: list[int], *, failing: frozenset[int] = frozenset()
) -> Session:
    session = Session.create(folder, session_id="prune-test", durable=False)
    session.append(UserEntry(text="Read every module and report."))
    for k, lines in enumerate(sizes):
        call = ToolCallRecord(id=f"c{k}", name="file_read", arguments_json=f'{{"path":"m{k}.py"}}')
        session.append(AssistantEntry(text=f"Reading m{k}.py.", tool_calls=(call,)))
        session.append(
            ToolResultEntry(
                call_id=f"c{k}",
                tool_name="file_read",
                status="error" if k in failing else "success",
                content=output(k, lines),
            )
        )
    return session


def session_with_writes(
    folder: Path,
    count: int,
    *,
    failing: frozenset[int] = frozenset(),
    protocol: str = "native",
    reasoning: bool = False,
) -> Session:
    """A session of ``count`` file writes, each call carrying a long ``content`` argument
    (and, with ``reasoning``, each reply a long text before it)."""
    session = Session.create(
        folder, session_id="prune-calls", durable=False, style=RenderStyle(protocol)
    )
    session.append(UserEntry(text="Write every module."))
    for k in range(count):
        arguments = canonical_json({"path": f"m{k}.py", "content": output(k, 60)})
        call = ToolCallRecord(id=f"w{k}", name="file_write", arguments_json=arguments)
        thought = f"Considering plan_{k}_{{i}} for m{k}.py.\n" if reasoning else ""
        text = "".join(thought.format(i=i) for i in range(20)) + f"Writing m{k}.py."
        session.append(AssistantEntry(text=text, tool_calls=(call,)))
        session.append(
            ToolResultEntry(
                call_id=f"w{k}",
                tool_name="file_write",
                status="error" if k in failing else "success",
                content=f"wrote m{k}.py" if k not in failing else "disk full",
            )
        )
    return session


def session_of_calls(folder: Path, arguments: list[str], name: str = "tool") -> Session:
    """A session of one call a reply, the k-th (id ``c<k>``) with ``arguments[k]`` as its
    arguments' JSON (or free-form text), each answered ``ok``."""
    session = Session.create(folder, session_id="prune-calls", durable=False)
    session.append(UserEntry(text="Work through it."))
    for k, arguments_json in enumerate(arguments):
        call = ToolCallRecord(id=f"c{k}", name=name, arguments_json=arguments_json)
        session.append(AssistantEntry(text="", tool_calls=(call,)))
        session.append(
            ToolResultEntry(call_id=f"c{k}", tool_name=name, status="success", content="ok")
        )
    return session


def prune_calls(session: Session) -> list[tuple[int, ToolCallRecord, tuple[str, ...]]]:
    """Prune a session of ``session_of_calls`` once: for each pruned call, its number, the
    call as pruned and its artifacts."""
    p = pruner(session)
    entry = p.prune(p.decide())
    assert entry.calls
    return [
        (int(c.assistant.tool_calls[0].id.removeprefix("c")), c.assistant.tool_calls[0], c.refs)
        for c in entry.calls
    ]


AFFORD_ANY = 1e6
# The sessions here keep two results: with one kept, a batch of all the others in these
# uniform sessions shrinks nearly the whole suffix, so its rewrite costs less than reading
# the cache, and even a warm cache with nothing in hand prunes.
KEEP = 2


def stubbed_calls(session: Session) -> dict[int, AssistantEntry]:
    return {
        r.index: r.entry
        for r in session.live
        if isinstance(r.entry, AssistantEntry) and session.records[r.index] is not r
    }


def pruner(session: Session, model: str = "", **settings_: object) -> Pruner:
    """A pruner for a session built in one go: it has seen no steps, so nothing is banked
    yet; unless a test says otherwise, any bet is affordable."""
    settings_.setdefault("prune_risk_share", AFFORD_ANY)
    settings_.setdefault("prune_keep_recent", KEEP)
    externalizer = Externalizer(session.layout.artifacts, str)
    return pruner_of(
        Config().with_flags(**settings_), session, externalizer, CachePolicy.of_model(model)
    )


def stubs(session: Session) -> dict[int, ToolResultEntry]:
    return {
        r.index: r.entry
        for r in session.live
        if isinstance(r.entry, ToolResultEntry) and session.records[r.index] is not r
    }


def test_a_long_session_prunes_old_results_into_recoverable_stubs(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    decision = pruner(session).decide()
    assert decision is not None and decision.saved_tokens > 0
    assert decision.payback_steps < 0.5 * 30
    pruner(session).prune(decision)

    pruned = stubs(session)
    assert set(pruned) == {r.index for r in decision.records}
    for index, stub in pruned.items():
        original = session.records[index].entry
        assert isinstance(original, ToolResultEntry)
        assert stub.content.startswith("[pruned: ")
        assert (session.directory / stub.full_ref).read_text() == original.content
        assert (
            stub.full_ref in stub.content or str(session.directory / stub.full_ref) in stub.content
        )
    assert isinstance(session.records[-1].entry, PruneEntry)


def test_a_stub_names_its_artifact_by_the_short_path_the_file_tools_open(tmp_path):
    root = tmp_path / "ws"
    session = session_with_steps(root / ".contextengine" / "sessions" / "s", [120] * 30)
    ws = Workspace(root, session_dir=session.directory, session_access={"artifacts": "read"})
    externalizer = Externalizer(session.layout.artifacts, ws.display, ws.artifact_path)
    p = pruner_of(
        Config().with_flags(prune_risk_share=AFFORD_ANY, prune_keep_recent=KEEP),
        session,
        externalizer,
        CachePolicy.of_model(""),
    )
    p.prune(p.decide())

    pruned = stubs(session)
    assert pruned
    for index, stub in pruned.items():
        original = session.records[index].entry
        assert isinstance(original, ToolResultEntry)
        shown = stub.content.split("saved at ", 1)[1].split("]", 1)[0]
        assert shown == f".contextengine/artifacts/{Path(stub.full_ref).name}"
        assert ws.resolve(shown).read_text() == original.content


def test_the_newest_results_stay_verbatim_and_an_old_failure_keeps_its_error(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30, failing=frozenset({3, 4}))
    p = pruner(session, prune_keep_recent=5)
    p.prune(p.decide())
    pruned = stubs(session)
    results = [r for r in session.records if isinstance(r.entry, ToolResultEntry)]
    assert not {r.index for r in results[-5:]} & set(pruned)
    failed = [r for r in results if r.entry.status == "error"]
    assert {r.index for r in failed} <= set(pruned)
    for record in failed:
        original, stub = record.entry.content, pruned[record.index]
        error = "\n".join(original.splitlines()[-ERROR_TAIL_LINES:])  # its last lines
        assert stub.status == "error" and stub.content.startswith("[pruned: ")
        assert stub.content.endswith("\n" + error)
        assert (session.directory / stub.full_ref).read_text() == original
        calls = [r.entry for r in session.live if r.index == record.index - 1]
        assert calls == [session.records[record.index - 1].entry], "the failed call stays"


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (
            '{"ref": 1}\nNames: a b\n<error>\nline 1\n<error>x</error>\n</error>',
            "<error>\nline 1\n<error>x</error>\n</error>",
        ),
        (
            "".join(f"row {i}\n" for i in range(40)) + "[exit code 1]",
            "".join(f"row {i}\n" for i in range(21, 40)) + "[exit code 1]",
        ),
        (
            "ok\n" * 30 + "Traceback (most recent call last):\n" + "  frame\n" * 30 + "E: boom",
            "Traceback (most recent call last):\n" + "  frame\n" * 30 + "E: boom",
        ),
        ("x" * 5000, "x" * (ERROR_TAIL_CHARS - 1)),
        ("a\rb\rc", "a\rb\rc"),  # lines ``splitlines`` reads alike: all stays
    ],
    ids=["error block", "last lines", "whole traceback", "one long line", "odd breaks"],
)
def test_a_failure_keeps_its_error_block_or_its_last_lines(content: str, kept: str) -> None:
    assert failure_kept(content) == kept


@given(st.text(), st.booleans())
def test_what_a_failure_keeps_is_its_own_ending_and_its_whole_error_block(
    text: str, block: bool
) -> None:
    content = f"{text}\n<error>\n{text}\n</error>" if block else text
    kept = failure_kept(content)
    assert content.endswith(kept)
    if block:
        assert kept.endswith(f"<error>\n{text}\n</error>")


def test_every_result_of_the_newest_replies_stays_verbatim(tmp_path):
    """A reply's parallel calls whose whole output is in the first result (as Claude
    Code's converter writes it), the others placeholders: the newest results are the
    placeholders, but the step is the newest, so its output stays."""
    session = session_with_steps(tmp_path / "s", [120] * 30)
    calls = tuple(
        ToolCallRecord(id=f"p{k}", name="file_read", arguments_json=f'{{"path":"n{k}.py"}}')
        for k in range(4)
    )
    session.append(AssistantEntry(text="Reading four more.", tool_calls=calls))
    for k, call in enumerate(calls):
        content = output(99, 120) if k == 0 else "(included in the first result)"
        session.append(
            ToolResultEntry(
                call_id=call.id, tool_name="file_read", status="success", content=content
            )
        )
    p = pruner(session)
    p.prune(p.decide())
    newest_step = {r.index for r in session.records[-6:-1]}
    assert len(stubs(session)) > 20, "the old results went"
    assert not newest_step & (set(stubs(session)) | set(stubbed_calls(session)))


def test_the_newest_results_stay_verbatim_whatever_call_they_answer(tmp_path):
    """Results whose call id no reply holds (a framework that renamed its ids) are still
    the newest results."""
    session = session_with_steps(tmp_path / "s", [120] * 30)
    for k in range(KEEP):
        session.append(
            ToolResultEntry(
                call_id=f"renamed{k}",
                tool_name="file_read",
                status="success",
                content=output(90 + k),
            )
        )
    p = pruner(session)
    p.prune(p.decide())
    assert stubs(session), "the old results went"
    assert not {r.index for r in session.records[-1 - KEEP : -1]} & set(stubs(session))


def test_a_short_session_or_small_results_are_not_worth_a_rewrite(tmp_path):
    assert pruner(session_with_steps(tmp_path / "a", [120] * 6)).decide() is None
    assert pruner(session_with_steps(tmp_path / "b", [1] * 40)).decide() is None
    assert pruner(session_with_steps(tmp_path / "c", [120] * 30), pruning=False).decide() is None


def test_the_stub_keeps_names_nothing_else_in_view_holds(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    p = pruner(session)
    decision = p.decide()
    p.prune(decision)
    first = decision.records[0].entry
    stub = stubs(session)[decision.records[0].index]
    k = first.call_id.removeprefix("c")
    assert f"helper_{k}_0" in stub.content and f"compute_{k}_0" in stub.content
    assert "Reading" not in stub.content, "plain words and names in view are not listed"


def test_the_stub_leaves_out_names_inside_longer_listed_ones(tmp_path):
    session = Session.create(tmp_path / "s", session_id="prune-nested", durable=False)
    session.append(UserEntry(text="List every package."))
    for k in range(30):
        tree = "\n".join(
            f"drwxr-xr-x pkg_{k}/locale_{i} pkg_{k}/locale_{i}/LC_MESSAGES" for i in range(60)
        )
        call = ToolCallRecord(id=f"c{k}", name="shell_exec", arguments_json='{"command":"ls"}')
        session.append(AssistantEntry(text="Listing.", tool_calls=(call,)))
        session.append(
            ToolResultEntry(call_id=f"c{k}", tool_name="shell_exec", status="success", content=tree)
        )
    p = pruner(session)
    decision = p.decide()
    assert decision is not None
    p.prune(decision)
    stub = stubs(session)[decision.records[0].index].content
    listed = stub.split("\nnames: ", 1)[1].split(" ")
    assert listed[:2] == ["pkg_0/locale_0/LC_MESSAGES", "pkg_0/locale_1/LC_MESSAGES"]
    assert "pkg_0/locale_1" in stub and "pkg_0/locale_1" not in listed, "held by a longer one"


def test_a_stub_lists_its_shortest_names_first(tmp_path):
    """Past the cap, the short names stay: as likely to be used later as a long path, for
    fewer characters on every later request."""
    session = Session.create(tmp_path / "s", session_id="prune-short-first", durable=False)
    session.append(UserEntry(text="Map the tree."))
    for k in range(30):
        paths = [f"src/package_{k}/module_{i:03d}/implementation.py" for i in range(MAX_STUB_NAMES)]
        names = [f"fn_{k}_{i:03d}" for i in range(MAX_STUB_NAMES)]
        call = ToolCallRecord(id=f"c{k}", name="shell_exec", arguments_json='{"command":"ls"}')
        session.append(AssistantEntry(text="Listing.", tool_calls=(call,)))
        session.append(
            ToolResultEntry(
                call_id=f"c{k}",
                tool_name="shell_exec",
                status="success",
                content="\n".join(paths + names),
            )
        )
    p = pruner(session)
    decision = p.decide()
    assert decision is not None
    p.prune(decision)
    stub = stubs(session)[decision.records[0].index].content
    k = decision.records[0].entry.call_id.removeprefix("c")
    listed = stub.split("\nnames: ", 1)[1].removesuffix(f" (and {MAX_STUB_NAMES} more)").split(" ")
    assert listed == [f"fn_{k}_{i:03d}" for i in range(MAX_STUB_NAMES)]


def test_a_name_one_stub_leaves_out_is_listed_by_the_next_that_holds_it(tmp_path):
    session = Session.create(tmp_path / "s", session_id="prune-shared", durable=False)
    session.append(UserEntry(text="Run the suite again and again."))
    names = [f"case_{i:03d}_passed" for i in range(MAX_STUB_NAMES + 30)]
    for k in range(30):
        call = ToolCallRecord(id=f"c{k}", name="shell_exec", arguments_json='{"command":"t"}')
        session.append(AssistantEntry(text="Testing.", tool_calls=(call,)))
        text = f"run_{k}\n" + "\n".join(names) if k < 29 else "all passed"
        session.append(
            ToolResultEntry(call_id=f"c{k}", tool_name="shell_exec", status="success", content=text)
        )
    p = pruner(session, prune_keep_recent=1)
    decision = p.decide()
    assert decision is not None and len(decision.records) > 2
    p.prune(decision)
    view = "\n".join(entry.content for entry in stubs(session).values())
    assert all(name in view for name in names), "the first stub's left-out names are in the next"


def test_the_next_request_breaks_the_cache_once_with_cause_prune(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    builder = ContextBuilder(system_prompt="You read code.")
    monitor = PrefixMonitor()
    monitor.observe(builder.build(session))
    p = pruner(session)
    p.prune(p.decide())
    report = monitor.observe(builder.build(session))
    assert report.cache_break is not None and report.cache_break.cause == "prune"
    assert monitor.observe(builder.build(session)).cache_break is None


def test_a_reopened_session_shows_the_same_pruned_view(tmp_path):
    folder = tmp_path / "s"
    session = session_with_steps(folder, [120] * 30)
    p = pruner(session)
    p.prune(p.decide())
    before = [r.chunks for r in session.live]
    session.close()
    again = Session.open(folder)
    assert [r.chunks for r in again.live] == before
    assert again.rewrite == "prune" and again.epoch == 1


def test_a_pruned_failure_is_still_a_failure_after_a_reopen_and_a_success_line_is_as_it_was(
    tmp_path,
):
    folder = tmp_path / "s"
    session = session_with_steps(folder, [120] * 30, failing=frozenset({2}))
    p = pruner(session)
    p.prune(p.decide())
    session.close()
    line = json.loads((folder / "session.jsonl").read_text().splitlines()[-1])
    by_call = {r["call_id"]: r for r in line["entry"]["results"]}
    assert by_call["c2"]["status"] == "error" and "status" not in by_call["c1"]
    again = {
        r.entry.call_id: r.entry.status
        for r in Session.open(folder).live
        if isinstance(r.entry, ToolResultEntry)
    }
    assert again["c2"] == "error" and again["c1"] == "success"


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sizes=st.lists(st.integers(min_value=1, max_value=200), min_size=8, max_size=40))
def test_pruning_is_append_only_and_reversible(tmp_path_factory, sizes):
    folder = tmp_path_factory.mktemp("prop") / "s"
    session = session_with_steps(folder, sizes)
    log_before = [r.to_json() for r in session.records]
    p = pruner(session)
    decision = p.decide()
    if decision is None:
        return
    p.prune(decision)
    assert [r.to_json() for r in session.records[: len(log_before)]] == log_before
    for index, stub in stubs(session).items():
        original = session.records[index].entry
        assert (session.directory / stub.full_ref).read_text() == original.content
    assert sum(len(c) for r in session.live for c in r.chunks) < sum(
        len(c) for r in session.records[: len(log_before)] for c in r.chunks
    )


def test_free_cache_reads_never_pay_for_a_rewrite(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    assert pruner(session, cache_read_price=0.0).decide() is None


def cache_prices(config: Config, model: str) -> tuple[float, float]:
    """What the pruner of a provider of ``model`` prices a cache read and write at."""
    session = Session.create(Path(tempfile.mkdtemp()) / "s")
    externalizer = Externalizer(session.layout.artifacts, str)
    cache = pruner_of(config, session, externalizer, CachePolicy.of_model(model)).cache
    return cache.read_price, cache.write_price


def test_cache_prices_are_the_models_own_unless_the_config_sets_them():
    assert cache_prices(Config(), "claude-sonnet-4-5") == pytest.approx((0.1, 1.25))
    assert cache_prices(Config(), "deepseek/deepseek-chat") == pytest.approx((0.07 / 0.27, 1.0))
    assert cache_prices(Config(), "gpt-5") == pytest.approx((0.1, 1.0)), "no write premium"
    assert cache_prices(Config(), "my-own-finetune") == (0.1, 1.25), "unknown: Anthropic's"
    assert cache_prices(Config(), "") == (0.1, 1.25)
    chosen = Config(cache_read_price=0.5, cache_write_price=2.0)
    assert cache_prices(chosen, "deepseek/deepseek-chat") == (0.5, 2.0)
    assert cache_prices(Config(cache_write_price=2.0), "gpt-5") == pytest.approx((0.1, 2.0))


def test_a_model_whose_cache_reads_cost_more_prunes_sooner(tmp_path):
    session = session_with_steps(tmp_path / "s", [40] * 12)
    assert pruner(session, "claude-sonnet-4-5", prune_keep_recent=4).decide() is None
    deepseek = pruner(session, "deepseek/deepseek-chat", prune_keep_recent=4)
    assert deepseek.decide() is not None, "reads at 0.26"


def test_old_call_arguments_become_stubs_and_the_call_keeps_its_shape(tmp_path):
    session = session_with_writes(tmp_path / "s", 30)
    p = pruner(session)
    decision = p.decide()
    assert decision is not None
    entry = p.prune(decision)
    pruned = stubbed_calls(session)
    assert pruned and set(pruned) == {c.index for c in entry.calls}
    for index, stub in pruned.items():
        original = session.records[index].entry
        assert isinstance(original, AssistantEntry)
        (before,), (after,) = original.tool_calls, stub.tool_calls
        assert (after.id, after.name, stub.text) == (before.id, before.name, original.text)
        old, new = json.loads(before.arguments_json), json.loads(after.arguments_json)
        assert new["path"] == old["path"], "short arguments stay as they are"
        assert new["content"].startswith("[pruned: ")
        (ref,) = next(c.refs for c in entry.calls if c.index == index)
        assert (session.directory / ref).read_text() == old["content"]
        k = before.id.removeprefix("w")
        assert f"helper_{k}_0" in new["content"], "the names it held stay findable"


def test_failed_calls_the_newest_calls_and_text_protocol_calls_stay_verbatim(tmp_path):
    session = session_with_writes(tmp_path / "s", 30, failing=frozenset({2, 3}))
    p = pruner(session, prune_keep_recent=5)
    p.prune(p.decide())
    pruned = stubbed_calls(session)
    replies = [r for r in session.records if isinstance(r.entry, AssistantEntry)]
    assert pruned and not {r.index for r in replies[-5:]} & set(pruned)
    failed = {r.index for r in replies if r.entry.tool_calls[0].id in {"w2", "w3"}}
    assert not failed & set(pruned)
    text = session_with_writes(tmp_path / "t", 30, protocol="text")
    assert pruner(text).decide() is None, "a text-protocol reply is its text: no call to stub"


def test_the_reasoning_before_a_failed_call_may_go_but_the_call_stays(tmp_path):
    session = session_with_writes(tmp_path / "s", 30, failing=frozenset({12, 13}), reasoning=True)
    p = pruner(session, prune_keep_recent=5)
    entry = p.prune(p.decide())
    pruned = stubbed_calls(session)
    failed = [r for r in session.records if isinstance(r.entry, AssistantEntry)][12:14]
    for record in failed:
        original, stub = record.entry, pruned[record.index]
        assert stub.tool_calls == original.tool_calls, "a failed call stays verbatim (R5.1)"
        assert stub.text.startswith("[pruned: ") and stub.text.endswith(original.text[-40:])
        (ref,) = next(c.refs for c in entry.calls if c.index == record.index)
        assert original.text.startswith((session.directory / ref).read_text())
        assert f"plan_{original.tool_calls[0].id[1:]}_0" in stub.text, "its names stay findable"


def test_a_reopened_session_shows_the_same_pruned_calls(tmp_path):
    folder = tmp_path / "s"
    session = session_with_writes(folder, 30)
    p = pruner(session)
    p.prune(p.decide())
    before = [r.chunks for r in session.live]
    session.close()
    assert [r.chunks for r in Session.open(folder).live] == before


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(count=st.integers(min_value=6, max_value=40), keep=st.integers(min_value=0, max_value=6))
def test_call_pruning_is_append_only_and_reversible(tmp_path_factory, count, keep):
    folder = tmp_path_factory.mktemp("calls") / "s"
    session = session_with_writes(folder, count)
    log_before = [r.to_json() for r in session.records]
    p = pruner(session, prune_keep_recent=keep)
    decision = p.decide()
    if decision is None:
        return
    entry = p.prune(decision)
    assert [r.to_json() for r in session.records[: len(log_before)]] == log_before
    for call in entry.calls:
        original = session.records[call.index].entry
        values = [json.loads(c.arguments_json)["content"] for c in original.tool_calls]
        assert [(session.directory / ref).read_text() for ref in call.refs] == values


def test_a_batch_must_pay_back_within_prune_max_payback(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    decision = pruner(session, prune_keep_recent=4).decide()
    assert decision is not None and decision.payback_steps > 1
    assert pruner(session, prune_keep_recent=4, prune_max_payback=1).decide() is None


def test_an_argument_whose_stub_would_be_as_long_stays(tmp_path):
    arguments = [
        canonical_json(
            {
                "path": f"m{k}.py",
                "content": output(k, 200),
                # just over the minimum, all names
                "note": " ".join(f"name_{k}_{i}" for i in range(25)),
            }
        )
        for k in range(40)
    ]
    for _, after, _ in prune_calls(session_of_calls(tmp_path / "s", arguments, "file_write")):
        new = json.loads(after.arguments_json)
        assert new["content"].startswith("[pruned: ")
        assert new["note"].startswith("name_"), "a stub as long as the value saves nothing"


def test_a_bet_is_made_only_with_savings_in_hand(tmp_path):
    """A prune's rewrite is lost if the run ends right after it: with nothing saved yet,
    a small share of what the history has cost so far is all it may risk."""
    plain = session_with_steps(tmp_path / "a", [120] * 30)
    cautious = pruner(plain, prune_risk_share=0.01)
    assert [cautious.decide() for _ in range(5)] == [None] * 5

    saving = session_with_steps(tmp_path / "b", [120] * 30)
    call = ToolCallRecord(id="big", name="shell_exec", arguments_json='{"command":"cat log"}')
    saving.append(AssistantEntry(text="Reading the log.", tool_calls=(call,)))
    saving.append(
        ToolResultEntry(
            call_id="big",
            tool_name="shell_exec",
            status="success",
            content="[the log, saved at artifacts/log.txt]",
            full_ref="artifacts/log.txt",
            original_length=400_000,
        )
    )
    banked = pruner(saving, prune_risk_share=0.01, prune_keep_recent=4)
    decision = banked.decide()
    assert decision is not None and decision.extra > 0, "the shown ref already saved plenty"


def session_with_thoughts(folder: Path, protocol: str, reply: str) -> Session:
    """A session of 30 steps whose replies are each ``reply`` (with the step number)."""
    session = Session.create(
        folder, session_id="prune-thoughts", durable=False, style=RenderStyle(protocol)
    )
    session.append(UserEntry(text="Find the bug."))
    for k in range(30):
        call = ToolCallRecord(id=f"t{k}", name="shell_exec", arguments_json='{"command":"ls"}')
        session.append(AssistantEntry(text=reply.format(k=k), tool_calls=(call,)))
        session.append(
            ToolResultEntry(call_id=f"t{k}", tool_name="shell_exec", status="success", content="ok")
        )
    return session


THOUGHT = "Maybe the parser drops the last token when the input ends early.\n" * 30


def pruned_replies(
    folder: Path, protocol: str, reply: str
) -> list[tuple[AssistantEntry, PrunedCall]]:
    """Prune a session of ``reply``-long replies; each pruned reply with its stand-in."""
    session = session_with_thoughts(folder, protocol, reply)
    p = pruner(session, prune_horizon=4.0)
    entry = p.prune(p.decide())
    assert entry.calls
    return [(session.records[c.index].entry, c) for c in entry.calls]


def test_an_old_reply_loses_its_head_and_keeps_what_it_does_next(tmp_path):
    reply = THOUGHT + "Next: list the folder once more to see what changed."
    for original, call in pruned_replies(tmp_path / "s", "native", reply):
        text = call.assistant.text
        assert text.startswith("[pruned: ") and text.endswith(reply.splitlines()[-1])
        (ref,) = call.refs
        head = (tmp_path / "s" / ref).read_text()
        assert original.text == head + original.text[len(head) :]
        assert len(text) < len(original.text) / 3


COMMAND = "\n".join(f"sed -n '{i},{i + 1}p' src/module_{{k}}.py" for i in range(20))


@pytest.mark.parametrize(
    "action",
    [
        f"```bash\n{COMMAND}\n```",  # mini-swe-agent
        f'Action: shell_exec[{{{{"command": "{COMMAND}"}}}}]',  # ReAct
        f"<function=execute_bash>\n<parameter=command>\n{COMMAND}\n</parameter>\n</function>",
        f"<execute_bash>\n{COMMAND}\n</execute_bash>",  # CodeAct
    ],
)
def test_a_text_protocol_reply_keeps_its_whole_action(tmp_path, action):
    reply = THOUGHT + "THOUGHT: print the lines.\n\n" + action
    for original, call in pruned_replies(tmp_path / "s", "text", reply):
        assert call.assistant.text.startswith("[pruned: ")
        assert call.assistant.text.endswith("\n" + action.format(k=call.index // 2))
        assert original.text.endswith(call.assistant.text.split("\n", 1)[1])


def test_a_stub_lists_only_names_it_does_not_hold_already():
    stub = stub_text(2044, "art/obs-000189-Read.txt", ["art/obs-000189-Read.txt", "pane_id"])
    assert stub == "[pruned: 2,044 chars, saved at art/obs-000189-Read.txt]\nnames: pane_id"


def test_after_a_pause_longer_than_the_cache_lives_everything_prunable_goes_at_once(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    assert pruner(session, prune_risk_share=0.0).decide() is None, "no savings in hand to bet"
    cold = pruner(session, prune_risk_share=0.0, cache_expiry_s=0.0).decide()
    assert cold is not None and cold.extra < 0 and cold.payback_steps == 0
    assert len(cold.records) == 30 - KEEP, "every old result at once"


def test_the_cache_lives_as_long_as_the_provider_says_unless_the_config_sets_it(tmp_path):
    session = Session.create(tmp_path / "s")
    externalizer = Externalizer(session.layout.artifacts, str)
    hour = CachePolicy(lifetime_s=3600)
    assert pruner_of(Config(), session, externalizer, CachePolicy()).cache.lifetime_s == 300
    assert pruner_of(Config(), session, externalizer, hour).cache.lifetime_s == 3600
    chosen = pruner_of(Config(cache_expiry_s=60), session, externalizer, hour)
    assert chosen.cache.lifetime_s == 60


def test_a_pause_between_two_decisions_longer_than_the_cache_lives_prunes_for_free(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30)
    p = pruner(session, prune_risk_share=0.0, cache_expiry_s=3.0)  # the log keeps seconds
    assert p.decide() is None, "the replies are fresh: the cache is warm"
    assert p.decide() is None, "a request just went out: the cache is warm"
    time.sleep(3.1)
    decision = p.decide()
    assert decision is not None and decision.extra < 0


def test_a_reopened_log_whose_reply_time_is_unreadable_prunes_as_with_a_warm_cache(tmp_path):
    folder = tmp_path / "s"
    session_with_steps(folder, [120] * 30).close()
    log = folder / "session.jsonl"
    log.write_text(re.sub(r'"ts":"[^"]*"', '"ts":"late on Tuesday"', log.read_text()))
    p = pruner(Session.open(folder), prune_risk_share=0.0, cache_expiry_s=1.0)
    assert p.decide() is None, "no known pause: the cache counts as warm, and no bet is afforded"


def test_a_free_form_input_becomes_a_stub_as_a_whole(tmp_path):
    """A custom tool's input that is not JSON (Codex's ``apply_patch`` patch) is stubbed
    whole, as text: the call keeps its tool and id, the artifact holds the patch."""
    patches = []
    for k in range(30):
        lines = "\n".join(f"+{line}" for line in output(k, 60).splitlines())
        patches.append(f"*** Begin Patch\n*** Add File: src/m{k}.py\n{lines}\n*** End Patch")
    session = session_of_calls(tmp_path / "s", patches, "apply_patch")
    for k, after, (ref,) in prune_calls(session):
        assert after.name == "apply_patch"
        assert after.arguments_json.startswith("[pruned: "), "the stub is text, not JSON"
        assert f"src/m{k}.py" in after.arguments_json
        assert (session.directory / ref).read_text() == patches[k]


def test_a_list_of_short_strings_long_as_a_whole_becomes_one_stub(tmp_path):
    """A todo list (or a batch of small edits) holds no long string, yet is long as a
    whole: below the call's own keys it becomes one stub whose artifact holds its JSON;
    the call's own keys and a short list stay as they are."""
    todos = [
        [
            {"content": f"Refactor module_{k}_{i} into its own file", "status": "pending"}
            for i in range(40)
        ]
        for k in range(30)
    ]
    arguments = [canonical_json({"todos": t, "tags": ["a", "b"], "note": "keep"}) for t in todos]
    session = session_of_calls(tmp_path / "s", arguments, "TodoWrite")
    for k, after, (ref,) in prune_calls(session):
        arguments_after = json.loads(after.arguments_json)
        assert (arguments_after["tags"], arguments_after["note"]) == (["a", "b"], "keep")
        assert arguments_after["todos"].startswith("[pruned: ")
        assert f"module_{k}_0" in arguments_after["todos"], "the names it held stay findable"
        assert json.loads((session.directory / ref).read_text()) == todos[k]


def test_keys_that_make_the_same_file_name_get_a_file_each(tmp_path):
    """Two keys that become one file name once made safe (or cut to length) keep their
    values apart: each stub names its own artifact."""
    long_key = "k" * 200

    def text(n: int) -> str:
        return " ".join(str(n * 1000 + i) for i in range(150))  # no name a stub would list

    arguments = [
        canonical_json(
            {
                "a b": text(k),
                "a_b": text(k + 100),
                "x": {f"{long_key}1": text(k + 200), f"{long_key}2": text(k + 300)},
            }
        )
        for k in range(30)
    ]
    for k, _, refs in prune_calls(session_of_calls(tmp_path / "s", arguments)):
        assert len(set(refs)) == 4
        original = json.loads(arguments[k])
        saved = [(tmp_path / "s" / ref).read_text() for ref in refs]
        assert saved == [
            original["a b"],
            original["a_b"],
            original["x"][f"{long_key}1"],
            original["x"][f"{long_key}2"],
        ]


_WORDS = st.sampled_from(["alpha_", "beta.", "gamma/", "delta-", "epsilon", "zeta_9", " ", "\n"])
_TEXT = st.lists(_WORDS, max_size=120).map("".join)
_ARGUMENT = st.recursive(
    _TEXT | st.integers() | st.booleans(),
    lambda inner: st.lists(inner, max_size=12) | st.dictionaries(_TEXT, inner, max_size=6),
    max_leaves=60,
)


def _restored(original: object, pruned: object, refs: list[str], folder: Path) -> object:
    """``pruned`` with each stub that stands for a part of ``original`` replaced by its
    artifact (strings as saved, lists and objects as their JSON), in the order saved."""
    if pruned == original:
        return original
    if isinstance(pruned, str) and pruned.startswith("[pruned: "):
        saved = (folder / refs.pop(0)).read_text()
        return saved if isinstance(original, str) else json.loads(saved)
    if isinstance(pruned, dict) and isinstance(original, dict):
        return {k: _restored(original[k], v, refs, folder) for k, v in pruned.items()}
    assert isinstance(pruned, list) and isinstance(original, list)
    return [_restored(o, v, refs, folder) for o, v in zip(original, pruned, strict=True)]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(arguments=st.dictionaries(_TEXT, _ARGUMENT, min_size=1, max_size=5))
def test_pruned_arguments_of_any_shape_restore_from_their_artifacts(tmp_path_factory, arguments):
    folder = tmp_path_factory.mktemp("shapes") / "s"
    session = session_of_calls(folder, [canonical_json({**arguments, "n": k}) for k in range(30)])
    p = pruner(session)
    decision = p.decide()
    if decision is None:
        return
    entry = p.prune(decision)
    for call in entry.calls:
        original = json.loads(session.records[call.index].entry.tool_calls[0].arguments_json)
        pruned = json.loads(call.assistant.tool_calls[0].arguments_json)
        assert pruned.keys() == original.keys(), "the call keeps its own keys"
        refs = list(call.refs)
        assert _restored(original, pruned, refs, session.directory) == original
        assert refs == [], "every artifact stands for one stub"


def pasted_log(lines: int) -> str:
    return "".join(
        f"test_case_{i} FAILED: assert value_{i} == expected_{i}\n" for i in range(lines)
    )


def session_with_paste(
    folder: Path, paste: str, later: int = 30, task: str = "Keep the test suite green."
) -> Session:
    """A task, then a user message carrying ``paste`` between a first line and a request,
    then ``later`` file reads."""
    session = Session.create(folder, session_id="prune-user", durable=False)
    session.append(UserEntry(text=task))
    session.append(UserEntry(text=f"Here is what I ran:\n{paste}Please fix these tests."))
    for k in range(later):
        call = ToolCallRecord(id=f"c{k}", name="file_read", arguments_json=f'{{"path":"m{k}.py"}}')
        session.append(AssistantEntry(text="", tool_calls=(call,)))
        session.append(
            ToolResultEntry(call_id=f"c{k}", tool_name="file_read", status="success", content="ok")
        )
    return session


def pruned_users(session: Session) -> tuple[PrunedUser, ...]:
    p = pruner(session)
    decision = p.decide()
    return p.prune(decision).users if decision is not None else ()


_USER_STUB = re.compile(r"\n?\[pruned: [\d,]+ chars, saved at [^\]\n]+\](?:\nnames: [^\n]*)?\n")


def assert_stands_for(shown: str, original: str, middle: str) -> None:
    """``shown`` is ``original`` with ``middle`` (the artifact) replaced by its stub, at
    least the first 300 and the last 600 characters kept."""
    head = shown[: shown.index("[pruned: ")]
    if not original.startswith(head + middle):  # cut inside a line: the stub has its own
        head = head.removesuffix("\n")
    assert original.startswith(head + middle) and len(head) >= 300
    tail = original[len(head + middle) :]
    assert shown.endswith(tail) and len(tail) >= 600
    assert _USER_STUB.fullmatch(shown[len(head) : len(shown) - len(tail)])


def test_an_old_long_user_message_keeps_its_start_and_end_and_its_middle_goes_to_a_file(
    tmp_path,
):
    paste = pasted_log(200)
    session = session_with_paste(tmp_path / "s", paste)
    (user,) = pruned_users(session)
    original = session.records[user.index].entry.text
    shown = user.user.text
    assert shown.startswith("Here is what I ran:\ntest_case_0 FAILED")
    assert shown.endswith(
        "test_case_199 FAILED: assert value_199 == expected_199\nPlease fix these tests."
    )
    assert "names: " in shown and len(shown) < len(original) / 4
    assert_stands_for(shown, original, (session.directory / user.ref).read_bytes().decode())
    assert [r.entry for r in session.live if r.index == user.index] == [user.user]


def test_a_reopened_session_shows_the_same_pruned_user_message(tmp_path):
    folder = tmp_path / "s"
    session = session_with_paste(folder, pasted_log(200))
    assert pruned_users(session)
    before = [r.chunks for r in session.live]
    session.close()
    assert [r.chunks for r in Session.open(folder).live] == before


def test_the_task_a_short_message_and_one_not_yet_answered_stay_whole(tmp_path):
    paste = pasted_log(200)
    session = session_with_paste(tmp_path / "s", paste, task="Keep it green:\n" + paste)
    session.append(UserEntry(text="And this one too:\n" + paste))
    session.append(UserEntry(text="Short: " + pasted_log(30)))
    call = ToolCallRecord(id="x", name="file_read", arguments_json='{"path":"x.py"}')
    session.append(AssistantEntry(text="", tool_calls=(call,)))
    session.append(
        ToolResultEntry(call_id="x", tool_name="file_read", status="success", content="ok")
    )
    # long enough a horizon that the batch pays back whatever it rewrites
    p = pruner(session, prune_horizon=1000.0, prune_max_payback=10**6)
    entry = p.prune(p.decide())
    assert [u.user.text.startswith("Here is what I ran:") for u in entry.users] == [True]


def long_text(parts: list[str], length: int) -> str:
    """``parts`` in turn, each followed by its number, until ``length`` characters."""
    out: list[str] = []
    size = 0
    while size < length:
        out.append(f"{parts[len(out) % len(parts)]}{len(out)}")
        size += len(out[-1])
    return "".join(out)


_PASTE = st.builds(
    long_text,
    st.lists(st.text(st.characters(codec="utf-8"), min_size=1, max_size=30), min_size=1),
    st.integers(min_value=2000, max_value=8000),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(paste=_PASTE)
def test_a_pruned_user_message_restores_from_its_start_artifact_and_end(tmp_path_factory, paste):
    session = session_with_paste(tmp_path_factory.mktemp("users") / "s", paste)
    users = pruned_users(session)
    assume(users)  # a paste that is a few tokens (one character repeated) is not worth it
    for user in users:
        original = session.records[user.index].entry.text
        middle = (session.directory / user.ref).read_bytes().decode()
        assert_stands_for(user.user.text, original, middle)
