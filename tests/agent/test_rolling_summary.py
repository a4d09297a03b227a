"""Rolling summary: sessions stay inside the window for any number of rounds (R7.4)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contextengine import Agent, Config, ScriptedProvider, Session, SummaryEntry, UserEntry
from contextengine.agent.compaction import FAILED_MESSAGE, Compactor
from contextengine.agent.events import CompactionEvent
from contextengine.compress.compaction import (
    ABSORB_PROMPT,
    SUMMARY_HEADING,
    TIMEOUT_MESSAGE,
    CompactionSettings,
    plan_compaction,
)
from contextengine.context.builder import ContextBuilder
from contextengine.context.tokens import count_tokens
from contextengine.errors import ProviderError
from contextengine.session.entries import (
    AssistantEntry,
    PruneEntry,
    ToolCallRecord,
    ToolResultEntry,
)
from contextengine.types import ModelReply
from support.strategies import steps

FIXTURES = Path(__file__).parent.parent / "fixtures"
ROUNDS = 84
WINDOW = 12_000
GOAL = "Keep the module notes current, one module per round."
LAW = "Never delete a module."


def _plan_call() -> dict:
    return {
        "content": "Planning.",
        "tool_calls": [
            {"name": "memory_plan_update", "arguments": {"goal": GOAL}},
            {
                "name": "todo_write",
                "arguments": {
                    "todos": [
                        {"content": "Read each module", "status": "in_progress"},
                        {"content": "Write the notes", "status": "pending"},
                    ]
                },
            },
        ],
    }


def _rounds_script():
    """The plan, then the long-session benchmark's rounds (read, grep, write a note)."""
    yield _plan_call()
    yield from _long_session().round_script(ROUNDS)


def _long_session():
    """``benchmarks/long_session.py`` as a module: the test drives the rounds it measures."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "long_session.py"
    spec = importlib.util.spec_from_file_location("long_session_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rolling_answer(request) -> dict:
    """A summary that stays about the same size however much it absorbs."""
    rounds = request.text().count("Round ") // 2
    return {
        "content": f"{SUMMARY_HEADING}\n*(Contains context from a to b)*\n\n"
        f"### 🎯 Objectives & Status\n* **Original Goal**: {GOAL}\n\n"
        f"### ✅ Completed Milestones\n* [✓] Notes written for about {rounds} rounds.\n"
        + "* [✓] Each module holds thirty small functions.\n"
        * 12
    }


@pytest.fixture
def memory_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder on tmpfs where there is one: the run fsyncs every append."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(dir=shm))
    yield folder
    shutil.rmtree(folder)


@pytest.mark.slow
def test_eighty_rounds_in_a_small_window_stay_inside_it(memory_dir):
    workspace = memory_dir / "ws"
    (workspace / "src").mkdir(parents=True)
    for n in range(20):
        (workspace / "src" / f"m{n}.py").write_text(
            "".join(f"def f{n}_{k}(x):\n    return x + {k}\n" for k in range(30))
        )
    (workspace / "CODE_LAW.md").write_text(LAW)
    script = _rounds_script()

    def respond(request):
        if request.purpose == "summary":
            return _rolling_answer(request)
        return next(script)

    provider = ScriptedProvider(respond)
    agent = Agent(provider, workspace, Config(context_window=WINDOW, keep_rounds=10))
    events: list = []
    for r in range(ROUNDS):
        run = list(agent.stream(GOAL if r == 0 else f"Round {r}: the next module."))
        events += run
        assert run[-1].result.status == "completed", run[-1].result.error
        assert sum(isinstance(x.entry, SummaryEntry) for x in agent.session.live) <= 1
    for request in provider.requests:
        assert sum(count_tokens(c) for c in request.chunks) <= WINDOW, request.purpose
        assert request.total_chars // 3 <= WINDOW, "the scripted provider's own count"
    summaries = [r.entry for r in agent.session.records if isinstance(r.entry, SummaryEntry)]
    assert len(summaries) >= 5 and all(s.absorbs for s in summaries[1:])
    asks = [r for r in provider.requests if r.purpose == "summary"]
    assert len(asks) == len(summaries)
    assert all(ABSORB_PROMPT.strip() in r.messages[-1]["content"] for r in asks[1:])
    done = [e for e in events if isinstance(e, CompactionEvent) and e.stage == "done"]
    assert len(done) == len(summaries)
    last = [r for r in provider.requests if r.purpose == "main"][-1]
    text = last.text()
    assert text.count(SUMMARY_HEADING) == 1
    assert LAW in text and GOAL in text
    assert "Read each module" in last.messages[-1]["content"], "the plan tail survives"
    assert f"Round {ROUNDS - 1}: the next module." in text
    usage = [
        json.loads(line) for line in (agent.session_dir / "usage.jsonl").read_text().splitlines()
    ]
    causes = [u["prefix"]["break"]["cause"] for u in usage if "break" in u["prefix"]]
    assert "compaction" in causes and set(causes) <= {"compaction", "prune"}
    _assert_archived(agent.session)


def _assert_archived(session: Session) -> None:
    """Every record out of the live view is in an archive file, exactly as logged."""
    in_view = {r.index for r in session.live}
    archived: dict[int, dict] = {}
    for path in sorted(session.layout.archive.glob("compaction-*.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
            record = json.loads(line)
            archived[record["i"]] = record
    for record in session.records:
        if record.index in in_view or isinstance(record.entry, PruneEntry):
            continue
        assert record.index in archived, f"record {record.index} left view unarchived"
        assert archived[record.index] == json.loads(record.to_json())


def _ask(outcome: str, n: int):
    def ask(request, timeout_s):
        if outcome == "failed":
            raise ProviderError("the provider is down")
        if False:
            yield
        if outcome == "timed_out":
            return None
        return ModelReply(content=f"{SUMMARY_HEADING}\nsummary number {n}")

    return ask


def _compactor(
    session: Session, window: int, keep_rounds: int = 2
) -> tuple[Compactor, ContextBuilder]:
    config = Config(context_window=window, keep_rounds=keep_rounds)
    sizes = lambda chunks: sum(len(c) for c in chunks) // 3  # noqa: E731
    return Compactor(session, config.settings(CompactionSettings), str, sizes), ContextBuilder(
        system_prompt="You help."
    )


def _run(compactor: Compactor, builder: ContextBuilder, session: Session, ask) -> bool:
    def summary_request(instruction: str, history_records: int | None):
        extra = ({"role": "user", "content": instruction},)
        return builder.build(
            session, purpose="summary", extra=extra, history_records=history_records
        )

    gen = compactor.run(summary_request, ask, 0)
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value


@settings(max_examples=50, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(
            st.lists(steps(), min_size=1, max_size=12),
            st.sampled_from(["done", "done", "timed_out", "failed"]),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(300, 6_000),
    st.integers(1, 4),
)
def test_any_sequence_of_compactions_leaves_one_summary_and_archives_everything(
    tmp_path_factory, segments, window, keep_rounds
):
    session = Session.create(tmp_path_factory.mktemp("r") / "s", durable=False)
    compactor, builder = _compactor(session, window, keep_rounds)
    carried = ""
    for n, (shape, outcome) in enumerate(segments):
        for step in shape:
            for entry in step:
                session.append(entry)
        if not _run(compactor, builder, session, _ask(outcome, n)):
            continue
        summaries = [r.entry for r in session.live if isinstance(r.entry, SummaryEntry)]
        assert len(summaries) == 1
        text = summaries[0].text
        if text.startswith(SUMMARY_HEADING):
            assert outcome == "done"
            carried = text
        else:
            assert text.startswith(("Summary generation failed (", TIMEOUT_MESSAGE))
            assert text.partition("\n\n")[2] == carried, "a failed summary keeps the last one"
    _assert_archived(session)
    again = Session.open(session.directory)
    assert [r.index for r in again.live] == [r.index for r in session.live]


def test_a_failed_summary_carries_the_earlier_one_and_says_why(tmp_path):
    session = Session.create(tmp_path / "s", durable=False)
    compactor, builder = _compactor(session, 2_000)
    for r in range(4):
        session.append(UserEntry(text=f"question {r}"))
        session.append(AssistantEntry(text=f"answer {r} " * 20))
    assert _run(compactor, builder, session, _ask("done", 1))
    for r in range(4, 8):
        session.append(UserEntry(text=f"question {r}"))
        session.append(AssistantEntry(text=f"answer {r} " * 20))
    assert _run(compactor, builder, session, _ask("failed", 2))
    (summary,) = [r.entry for r in session.live if isinstance(r.entry, SummaryEntry)]
    reason = FAILED_MESSAGE.format(reason="the provider is down")
    assert summary.text == f"{reason}\n\n{SUMMARY_HEADING}\nsummary number 1"
    for r in range(8, 12):
        session.append(UserEntry(text=f"question {r}"))
        session.append(AssistantEntry(text=f"answer {r} " * 20))
    assert _run(compactor, builder, session, _ask("timed_out", 3))
    (summary,) = [r.entry for r in session.live if isinstance(r.entry, SummaryEntry)]
    assert summary.timed_out
    assert summary.text == f"{TIMEOUT_MESSAGE}\n\n{SUMMARY_HEADING}\nsummary number 1", (
        "earlier failure lines are not repeated"
    )


def test_a_log_from_before_rolling_summaries_loads_as_before_and_is_absorbed_next(tmp_path):
    shutil.copytree(FIXTURES / "session_summaries_v2", tmp_path / "old")
    session = Session.open(tmp_path / "old")
    assert [(r.index, r.entry.kind) for r in session.live] == [
        (12, "summary"),
        (21, "summary"),
        (17, "user"),
        (18, "assistant"),
        (19, "tool_result"),
        (20, "assistant"),
        (22, "user"),
        (23, "assistant"),
        (24, "tool_result"),
        (25, "assistant"),
    ], "both summaries stay in view, where the old reader showed them"
    compactor, builder = _compactor(session, 200_000)
    session.append(UserEntry(text="question 6"))
    assert _run(compactor, builder, session, _ask("done", 3))
    entry = session.live[0].entry
    assert isinstance(entry, SummaryEntry) and entry.absorbs == (12, 21)
    assert sum(isinstance(r.entry, SummaryEntry) for r in session.live) == 1
    archive = tmp_path / "old" / entry.archive
    lines = [json.loads(line) for line in archive.read_text().split("\n")[:-1]]
    assert [line["i"] for line in lines][:2] == [12, 21]
    assert "first summary" in lines[0]["entry"]["text"]


def _round(index: int, result_chars: int) -> list:
    call = ToolCallRecord(id=f"c{index}", name="file_read", arguments_json="{}")
    return [
        UserEntry(text=f"question {index}"),
        AssistantEntry(text="reading", tool_calls=(call,)),
        ToolResultEntry(
            call_id=call.id, tool_name="file_read", status="success", content="x" * result_chars
        ),
        AssistantEntry(text=f"answer {index}"),
    ]


def _live(directory: Path, rounds: list[list]) -> Session:
    session = Session.create(directory, durable=False)
    for entries in rounds:
        for entry in entries:
            session.append(entry)
    return session


def test_the_kept_rounds_shrink_to_the_room_left_and_a_step_cut_follows(tmp_path):
    chars = lambda record: sum(len(c) for c in record.chunks)  # noqa: E731
    rounds = [_round(i, 1_000) for i in range(6)]
    session = _live(tmp_path / "a", rounds)
    plan = plan_compaction(session.live, 4, 100_000, keep_tokens=100_000, size=chars)
    assert plan is not None and plan.scope == "rounds"
    kept = [r for r in session.live if r not in plan.removed]
    assert sum(isinstance(r.entry, UserEntry) for r in kept) == 4, "room enough: keep_rounds"
    two_rounds = sum(chars(r) for r in session.live[-8:])
    plan = plan_compaction(session.live, 4, 100_000, keep_tokens=two_rounds + 10, size=chars)
    assert plan is not None and plan.scope == "rounds"
    kept = [r for r in session.live if r not in plan.removed]
    assert sum(isinstance(r.entry, UserEntry) for r in kept) == 2
    big = _live(tmp_path / "b", [_round(0, 1_000), _round(1, 1_000) + _round(2, 1_000)[1:]])
    plan = plan_compaction(big.live, 1, 100_000, keep_tokens=1_500, size=chars)
    assert plan is not None and plan.scope == "steps", "not even the newest round fits"
    kept = [r for r in big.live if r not in plan.removed]
    assert sum(chars(r) for r in kept) <= 1_500
    assert [r.entry.text for r in kept if isinstance(r.entry, UserEntry)] == [
        "question 0",
        "question 1",
    ]


def test_a_summary_request_over_the_window_is_cut_after_the_archived_part(tmp_path):
    session = Session.create(tmp_path / "s", durable=False)
    compactor, builder = _compactor(session, 3_000)
    for r in range(4):
        session.append(UserEntry(text=f"question {r}"))
        session.append(AssistantEntry(text=f"answer {r}: " + "detail " * 420))
    whole = builder.build(session)
    asked = []

    def ask(request, timeout_s):
        asked.append(request)
        if False:
            yield
        return ModelReply(content=f"{SUMMARY_HEADING}\nthe first two rounds")

    assert _run(compactor, builder, session, ask)
    (request,) = asked
    assert sum(len(c) for c in whole.chunks) // 3 > 3_000, "the whole history would not fit"
    assert sum(len(c) for c in request.chunks) // 3 <= 3_000
    shown = request.messages[:-1]
    assert shown == whole.messages[: len(shown)], "still a prefix of the cached request"
    assert shown[-1]["content"].startswith("answer 1: "), "it ends after the archived part"
    (summary,) = [r.entry for r in session.live if isinstance(r.entry, SummaryEntry)]
    assert summary.text.endswith("the first two rounds")
