"""A real vLLM server with prefix caching under a real agent session (R1.5, R1.6, R2.3).

The server reports cached prompt tokens; the agent's prefix monitor predicts them. The two
must agree to the token once the prediction is rendered with the server's template,
tokenized with its tokenizer and rounded down to whole KV blocks. Masked steps must keep
the tool list and obey the mask; every request carries the session id for routers.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def model_dir(bench, tmp_path_factory):
    """The tiny random-weight model as a Hugging Face folder."""
    return bench.build_model(tmp_path_factory.mktemp("vllm-model"))


@pytest.fixture(scope="module")
def server(bench, vllm_python, model_dir, tmp_path_factory):
    """One vLLM server with prefix caching for the whole module."""
    with bench.vllm_server(vllm_python, model_dir, tmp_path_factory.mktemp("vllm-logs")) as s:
        yield s


@pytest.fixture(scope="module")
def session(bench, server, tmp_path_factory):
    """An agent session through a recording proxy: ``(session_id, rows)``."""
    session_id = "vllm-test-session"
    work = tmp_path_factory.mktemp("vllm-session")
    with bench.RecordingProxy(server.url) as proxy:
        steps = bench.run_session(proxy.url, bench.make_workspace(work / "ws"), session_id)
        wire = proxy.chats()
    return session_id, bench.analyse(steps, wire, bench.Tokenizer(server.url), bench.BLOCK_SIZE)


def test_cached_tokens_equal_monitor_prediction_in_whole_blocks(session, bench):
    _, rows = session
    assert len(rows) == len(bench.TURNS) * bench.STEPS_PER_TURN
    assert rows[0].step.usage.cached_tokens == 0  # a fresh server, a first request
    for row in rows[1:]:
        predicted = row.prediction.cached_tokens
        assert predicted > 0
        assert predicted % bench.BLOCK_SIZE == 0
        assert row.agrees, row


def test_prediction_tokenizes_the_prompt_the_server_processed(session):
    _, rows = session
    for row in rows[1:]:
        assert row.prediction.prompt_tokens == row.step.usage.input_tokens
        # Past the unchanged messages, the prompts share only the next turn's header.
        assert 1 <= row.prediction.header_tokens <= 3


def test_masked_steps_keep_the_tools_and_obey_the_mask(session):
    _, rows = session
    tools = rows[0].wire.body["tools"]
    assert len(tools) == 8
    for row in rows:
        body = row.wire.body
        assert body["tools"] == tools
        allowed = tuple(sorted(row.step.allowed))
        if allowed:
            assert body["tool_choice"] == "auto"
            assert row.constrained_to == allowed
        else:  # a 3-strike reboot step: no tool allowed, the list still sent
            assert body["tool_choice"] == "none"
        assert row.obeys_mask, [c.name for c in row.step.calls]


def test_every_request_carries_the_session_id(session):
    session_id, rows = session
    for row in rows:
        assert row.wire.session_header == session_id
        assert row.wire.body["user"] == session_id


def test_router_pins_each_session_to_one_replica(bench, vllm_python, server, model_dir, tmp_path):
    """vllm-router with consistent hashing on ``x-session-id`` over two replicas."""
    if not (vllm_python.parent / "vllm-router").is_file():
        pytest.skip(f"vllm-router is not installed beside {vllm_python} (pip install vllm-router)")
    with (
        bench.vllm_server(vllm_python, model_dir, tmp_path, "vllm-second") as second,
        bench.RecordingProxy(server.url) as first_proxy,
        bench.RecordingProxy(second.url) as second_proxy,
        bench.vllm_router(
            vllm_python, [first_proxy.url, second_proxy.url], tmp_path / "router.log"
        ) as router,
    ):
        sessions = bench.routed_sessions(
            router.url,
            [first_proxy, second_proxy],
            bench.Tokenizer(server.url),
            tmp_path,
            count=2,
            turns=bench.TURNS[:2],
        )
    for routed in sessions:
        assert sorted(routed.per_replica) == [0, 2 * bench.STEPS_PER_TURN], routed.per_replica
        for row in routed.rows[1:]:
            assert row.agrees, row
    keys = bench.router_keys(tmp_path / "router.log")
    for routed in sessions:
        key = f"header:x-session-id:{routed.session_id}"
        assert len(keys.get(key, ())) == 1, f"router log has no single worker for {key}: {keys}"
