import json

from hypothesis import given
from hypothesis import strategies as st

from contextengine import (
    AssistantEntry,
    Config,
    ContextBuilder,
    FullObservation,
    LiveContext,
    PrefixMonitor,
    Session,
    ToolCallRecord,
    ToolResultEntry,
    UserEntry,
)
from contextengine.context.builder import BuilderSettings
from contextengine.context.tokens import count_tokens
from contextengine.session.render import RenderStyle
from support.strategies import steps

TOOLS = [
    {
        "name": "shell_exec",
        "description": "Run a command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
    {
        "name": "file_read",
        "description": "Read a file",
        "parameters": {"properties": {"path": {"type": "string"}}, "type": "object"},
    },
]


def _builder(tmp_path, config=None, system="You are a coding agent."):
    settings = config.settings(BuilderSettings) if config is not None else None
    return ContextBuilder(
        system_prompt=system, tools=TOOLS, project_root=tmp_path, settings=settings
    )


def _tool_step(session, n, content="ok", name="file_read"):
    session.append(
        AssistantEntry(
            text=f"step {n}",
            tool_calls=(ToolCallRecord(id=f"c{n}", name=name, arguments_json="{}"),),
        )
    )
    return session.append(
        ToolResultEntry(call_id=f"c{n}", tool_name=name, status="success", content=content)
    )


@given(st.lists(steps(), min_size=1, max_size=12), st.booleans(), st.text(max_size=20))
def test_persisted_part_of_each_request_is_a_byte_prefix_of_the_next(
    tmp_path_factory, plan, diversity, tail
):
    base = tmp_path_factory.mktemp("prefix")
    session = Session.create(base / "s", style=RenderStyle(diversity=diversity))
    builder = _builder(base)
    monitor = PrefixMonitor()
    previous = None
    for step in plan:
        for entry in step:
            session.append(entry)
        request = builder.build(session, LiveContext(tail=tail or None))
        report = monitor.observe(request)
        if previous is not None:
            persisted = "".join(previous.chunks[: previous.persisted_chunks])
            assert request.text().startswith(persisted)
            assert report.cache_break is None
            assert report.reusable_chars >= len(persisted)
        previous = request


def test_layer_order_tools_sorted_and_breakpoints(tmp_path):
    (tmp_path / "code_law.MD").write_text("Always write tests.")
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    _tool_step(session, 1, content="compressed")
    live = LiveContext(
        full_observations={2: FullObservation("file_read", "c1", "FULL TEXT")},
        tail="## Current Task Status",
    )
    request = _builder(tmp_path, Config(history_mode="compressed")).build(session, live)
    roles = [m["role"] for m in request.messages]
    assert roles == ["system", "system", "user", "assistant", "tool", "user", "user"]
    assert "Always write tests." in request.messages[1]["content"]
    assert "FULL TEXT" in request.messages[5]["content"]
    assert request.messages[6]["content"] == "## Current Task Status"
    assert request.tool_names == ("file_read", "shell_exec")
    assert request.breakpoints == [0, 1, 4]
    assert request.text() == "".join(
        json.dumps(x, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        for x in [request.tools, *request.messages]
    )


def test_live_observation_and_tail_are_never_stored(tmp_path):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    _tool_step(session, 1)
    live = LiveContext(
        full_observations={2: FullObservation("file_read", "c1", "FULL")}, tail="TAIL"
    )
    _builder(tmp_path, Config(history_mode="compressed")).build(session, live)
    log = (tmp_path / "s" / "session.jsonl").read_text()
    assert "FULL" not in log and "TAIL" not in log


def test_l1_scrubbed_and_reported(tmp_path):
    builder = _builder(tmp_path, system="Today is 2026-11-22T10:00:00Z, session_id: abc")
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hi"))
    request = builder.build(session)
    assert request.messages[0]["content"] == "Today is [DATE], session_id: [SESSION]"
    assert {f.kind for f in builder.scrub_findings} == {"date", "session_id"}


def test_l2_change_is_reported_as_the_cause_of_a_break(tmp_path):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    builder, monitor = _builder(tmp_path), PrefixMonitor()
    (tmp_path / "CODE_LAW.md").write_text("rule one")
    monitor.observe(builder.build(session))
    _tool_step(session, 1)
    (tmp_path / "CODE_LAW.md").write_text("rule two")
    report = monitor.observe(builder.build(session))
    assert report.cache_break is not None
    assert report.cache_break.cause == "l2_changed"
    assert (
        "rule one" in report.cache_break.old_snippet
        and "rule two" in report.cache_break.new_snippet
    )


def test_rules_over_a_quarter_of_the_window_are_cut_the_same_way_every_build(tmp_path, caplog):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    rules = "".join(f"Rule {n}: keep function {n} pure.\n" for n in range(2000))
    (tmp_path / "CODE_LAW.md").write_text(rules)
    builder = _builder(tmp_path, Config(context_window=8000))
    first, second = builder.build(session), builder.build(session)
    l2 = first.chunks[2]
    assert l2 == second.chunks[2]
    assert "Rule 0: keep function 0 pure." in l2 and "Rule 1999:" not in l2
    assert "CODE_LAW.md is cut here" in l2 and "file_read" in l2
    assert count_tokens(json.loads(l2)["content"]) <= 2000 + 20
    assert sum("only its start is used" in r.message for r in caplog.records) == 1


def test_rules_that_are_not_utf8_are_read_with_replacement_characters(tmp_path, caplog):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    (tmp_path / "CODE_LAW.md").write_bytes(b"Use tabs \xff\xfe never.\n")
    request = _builder(tmp_path).build(session)
    assert "Use tabs \ufffd\ufffd never." in json.loads(request.chunks[2])["content"]
    assert any("not UTF-8" in r.message for r in caplog.records)


def test_l1_and_tool_changes_are_reported(tmp_path):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    monitor = PrefixMonitor()
    monitor.observe(_builder(tmp_path).build(session))
    report = monitor.observe(_builder(tmp_path, system="Different.").build(session))
    assert report.cache_break.cause == "l1_changed"
    other_tools = ContextBuilder(system_prompt="Different.", tools=TOOLS[:1], project_root=tmp_path)
    assert monitor.observe(other_tools.build(session)).cache_break.cause == "tools_changed"


def test_diversity_is_frozen_at_append_and_varies_across_entries(tmp_path):
    body = "line of output\n" * 40
    session = Session.create(tmp_path / "s", session_id="div")
    contents = [_tool_step(session, n, body).messages[0]["content"] for n in range(12)]
    assert len(set(contents)) > 1
    assert all(c.endswith(body) for c in contents)
    reopened = Session.open(tmp_path / "s")
    assert [r.messages for r in reopened.records] == [r.messages for r in session.records]
    plain = Session.create(tmp_path / "p", session_id="div", style=RenderStyle(diversity=False))
    assert {_tool_step(plain, n, body).messages[0]["content"] for n in range(12)} == {body}


def test_a_result_too_small_for_its_label_stays_plain(tmp_path):
    # a label adding more than LABEL_MAX_SHARE of a result would be paid on every request
    session = Session.create(tmp_path / "s", session_id="div")
    assert {_tool_step(session, n).messages[0]["content"] for n in range(12)} == {"ok"}


def test_round_scratchpad_mode_shows_full_observations_of_the_round(tmp_path):
    config = Config(history_mode="round_scratchpad")
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="old round"))
    session.append(AssistantEntry(text="done"))
    start = session.append(UserEntry(text="new round")).index
    record = _tool_step(session, 1, content="short")
    live = LiveContext(
        full_observations={record.index: FullObservation("file_read", "c1", "FULL BODY")},
        round_start=start,
    )
    request = _builder(tmp_path, config).build(session, live)
    assert request.segments.history == 2
    assert request.messages[-1]["role"] == "tool"
    assert request.messages[-1]["content"].endswith("FULL BODY")
    assert request.breakpoints[-1] == 2


def test_full_mode_shows_no_live_observations(tmp_path):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hello"))
    _tool_step(session, 1, content="verbatim")
    live = LiveContext(full_observations={2: FullObservation("file_read", "c1", "FULL")})
    request = _builder(tmp_path, Config(history_mode="full")).build(session, live)
    assert request.segments.live == 0 and "FULL" not in request.text()


def test_all_flags_off_is_a_plain_chat_history(tmp_path):
    (tmp_path / "CODE_LAW.md").write_text("rules")
    config = Config(enabled=False)
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hi"))
    request = _builder(tmp_path, config, system="At 2026-01-01T00:00:00Z").build(
        session, LiveContext(full_observations={}, tail=None)
    )
    assert [m["content"] for m in request.messages] == ["At 2026-01-01T00:00:00Z", "hi"]
    assert request.breakpoints == []


def test_build_reuses_rendered_history_objects(tmp_path):
    session = Session.create(tmp_path / "s")
    session.append(UserEntry(text="hi"))
    builder = _builder(tmp_path)
    first = builder.build(session)
    _tool_step(session, 1)
    second = builder.build(session)
    assert first.chunks[2] is second.chunks[2]
