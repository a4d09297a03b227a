from contextengine import Config, Session
from contextengine.context.builder import (
    BuilderSettings,
    ContextBuilder,
    FullObservation,
    LiveContext,
)
from contextengine.measure.accounting import CacheAccountant, message_text
from contextengine.measure.tokens import TokenCounter
from contextengine.session.entries import (
    AssistantEntry,
    SummaryEntry,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)


def grow(session: Session, n: int) -> None:
    call = ToolCallRecord(id=f"call_{n}", name="bash", arguments_json='{"command":"ls"}')
    session.append(AssistantEntry(text=f"step {n}", tool_calls=(call,)))
    session.append(
        ToolResultEntry(
            call_id=f"call_{n}", tool_name="bash", status="success", content=f"file_{n}.py"
        )
    )


def setup(tmp_path):  # type: ignore[no-untyped-def]
    session = Session.create(tmp_path / "s", session_id="acc", durable=False)
    builder = ContextBuilder(
        system_prompt="system prompt", settings=Config(diversity=False).settings(BuilderSettings)
    )
    session.append(UserEntry(text="the task"))
    return session, builder, TokenCounter()


def test_message_text_is_what_the_model_reads() -> None:
    assert message_text({"role": "user", "content": "hi"}) == "user\n\nhi"
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    assert (
        message_text({"role": "assistant", "content": None, "tool_calls": [call]})
        == "assistant\n\n\nc1\nbash\n{}"
    )
    assert message_text({"role": "tool", "tool_call_id": "c1", "content": "ok"}) == "tool\nc1\nok"


def test_append_only_requests_read_the_previous_persisted_part_and_write_the_rest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    session, builder, counter = setup(tmp_path)
    accountant = CacheAccountant(counter)
    tail = LiveContext(tail="status: working")
    first = builder.build(session, tail)
    cost = accountant.charge(first, 5)
    persisted = sum(
        counter.count(c) if k == 0 else counter.count(message_text(first.messages[k - 1]))
        for k, c in enumerate(first.chunks[: first.persisted_chunks])
    )
    assert cost.cached_tokens == 0 and cost.cache_write_tokens == persisted
    assert cost.uncached_tokens == counter.count(message_text(first.messages[-1]))
    grow(session, 1)
    second = builder.build(
        session,
        LiveContext({3: FullObservation("bash", "call_1", "x" * 50)}, tail="status: working"),
    )
    cost2 = accountant.charge(second, 5)
    assert cost2.cached_tokens == persisted  # the tail of the first request is not reused
    assert cost2.prefix_tokens >= cost2.cached_tokens and cost2.ideal_tokens == cost2.prefix_tokens
    new_history = sum(
        counter.count(message_text(m))
        for m in second.messages[first.segments.persisted : second.segments.persisted]
    )
    assert cost2.cache_write_tokens == new_history
    assert cost2.uncached_tokens == sum(
        counter.count(message_text(m)) for m in second.messages[second.segments.persisted :]
    )
    assert cost2.cache_break is None and cost2.output_tokens == 5


def test_a_side_call_reads_what_main_wrote_and_its_own_write_serves_the_next_main(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    session, builder, counter = setup(tmp_path)
    accountant = CacheAccountant(counter)
    first = accountant.charge(builder.build(session), 0)
    grow(session, 1)
    side = builder.build(
        session, purpose="summary", extra=({"role": "user", "content": "summarize"},)
    )
    side_cost = accountant.charge(side, 0)
    assert side_cost.cached_tokens == first.cache_write_tokens  # it reads what main wrote
    assert side_cost.cache_write_tokens > 0  # and writes the grown history
    main_cost = accountant.charge(builder.build(session), 0)
    assert main_cost.cached_tokens == side_cost.cached_tokens + side_cost.cache_write_tokens
    assert main_cost.cache_write_tokens == 0
    assert main_cost.prefix_tokens < main_cost.cached_tokens, "prefix reuse is vs the last main"
    grow(session, 2)
    after = accountant.charge(builder.build(session), 0)
    assert after.prefix_tokens == after.cached_tokens  # the side call is no longer a reference


def test_a_rewritten_history_is_a_break_and_ideal_reuse_shows_the_loss(tmp_path) -> None:  # type: ignore[no-untyped-def]
    session, builder, counter = setup(tmp_path)
    accountant = CacheAccountant(counter)
    for n in range(4):
        grow(session, n)
    before = accountant.charge(builder.build(session), 0)
    assert before.cache_break is None
    session.append(
        SummaryEntry(text="summary", archive="archive/x.jsonl", first_index=1, end_index=5)
    )
    after = accountant.charge(builder.build(session), 0)
    assert after.cache_break is not None and after.cache_break.cause == "compaction"
    assert after.cached_tokens < after.ideal_tokens
