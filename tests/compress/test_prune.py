"""Cache-aware pruning (R7.8): when it fires, what it keeps, and that nothing is lost."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine import Config
from contextengine.compress.externalize import Externalizer
from contextengine.compress.prune import Pruner
from contextengine.context.builder import ContextBuilder
from contextengine.context.monitor import PrefixMonitor
from contextengine.session.entries import (
    AssistantEntry,
    PruneEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.session.session import Session


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


def pruner(session: Session, **settings_: object) -> Pruner:
    externalizer = Externalizer(session.layout.artifacts, str)
    return Pruner(session, Config().with_flags(**settings_), externalizer)


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


def test_the_newest_results_and_errors_stay_verbatim(tmp_path):
    session = session_with_steps(tmp_path / "s", [120] * 30, failing=frozenset({3, 4}))
    p = pruner(session, prune_keep_recent=5)
    p.prune(p.decide())
    pruned = stubs(session)
    results = [r for r in session.records if isinstance(r.entry, ToolResultEntry)]
    assert not {r.index for r in results[-5:]} & set(pruned)
    assert not {r.index for r in results if r.entry.status == "error"} & set(pruned)


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
