"""LlamaCppProvider on the tiny model: grammar-enforced masks, prefix reuse, usage, errors."""

from __future__ import annotations

import pytest

from contextengine import (
    AssistantEntry,
    ConfigError,
    ContextBuilder,
    PrefixMonitor,
    ProviderError,
    Session,
    ToolCallRecord,
    ToolMask,
    ToolResultEntry,
    UserEntry,
)
from contextengine.context.monitor import common_prefix_len
from contextengine.local.chat_format import (
    GENERATION_PROMPT,
    parse_reply,
    render_call,
    render_prompt,
    render_turns,
)
from contextengine.local.grammar import mask_grammar
from contextengine.providers.local import LlamaCppProvider
from contextengine.types import ReplyDone, TextDelta

llama_cpp = pytest.importorskip(
    "llama_cpp", reason="llama-cpp-python is not installed (pip install 'contextengine[local]')"
)

pytestmark = pytest.mark.local_engine

TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("file_ls", "file_read", "file_write", "shell_exec", "web_fetch")
]
ALLOWED = {"file_read", "file_ls"}
GENERATIONS = 20


@pytest.fixture
def provider(tiny_model):
    """A fresh provider per test (loading takes milliseconds), so seeds never depend on order."""
    return LlamaCppProvider(
        tiny_model.gguf_path, n_ctx=4096, max_tokens=160, temperature=1.0, seed=100
    )


def _new_session(tmp_path, name, system="You are a coding agent. Use the tools."):
    session = Session.create(tmp_path / name)
    return session, ContextBuilder(system_prompt=system, tools=TOOLS, project_root=tmp_path)


def _step(session, n, text="Working on it."):
    call = ToolCallRecord(id=f"c{n}", name="file_read", arguments_json='{"path":"README.md"}')
    session.append(AssistantEntry(text=text, tool_calls=(call,)))
    session.append(
        ToolResultEntry(
            call_id=f"c{n}", tool_name="file_read", status="success", content=f"line {n}\n" * 5
        )
    )


@pytest.mark.parametrize("mode", ["required", "specified"])
def test_grammar_allows_only_masked_tools(provider, tmp_path, mode):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Read the readme."))
    request = builder.build(session, mask=ToolMask(tuple(sorted(ALLOWED)), mode))
    names = []
    for _ in range(GENERATIONS):
        reply = provider.complete(request)
        assert len(reply.tool_calls) == 1, reply
        assert reply.content == ""
        names.append(reply.tool_calls[0].name)
    assert set(names) <= ALLOWED
    assert len(set(names)) == 2  # sampling really varies with the seed


def test_auto_mask_allows_text_or_an_allowed_call(provider, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Read the readme."))
    request = builder.build(session, mask=ToolMask(("file_",), "auto"))
    for _ in range(GENERATIONS):
        reply = provider.complete(request)
        assert all(call.name.startswith("file_") for call in reply.tool_calls)
        assert "<tool_call>" not in reply.content


def test_auto_mask_allowing_no_tool_gives_text(provider, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Just answer."))
    request = builder.build(session, mask=ToolMask(("memory_",), "auto"))
    for _ in range(5):
        reply = provider.complete(request)
        assert reply.tool_calls == ()
        assert "<tool_call>" not in reply.content


@pytest.mark.parametrize("mode", ["auto", "required"])
def test_grammar_overrides_a_model_that_wants_a_masked_tool(provider, tmp_path, mode):
    """Bias the model hard toward calling shell_exec: unmasked it does, masked it cannot."""
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Run the tests."))
    request = builder.build(session, mask=ToolMask(tuple(sorted(ALLOWED)), mode))
    prompt = provider.tokenize(render_prompt(request))
    wanted = provider.tokenize(render_call("shell_exec", "{}"))

    def push_toward_wanted(input_ids, logits):
        done = list(input_ids[len(prompt) :])
        if done == wanted[: len(done)] and len(done) < len(wanted):
            logits[wanted[len(done)]] += 100.0
        return logits

    def run(grammar_text):
        grammar = grammar_text and llama_cpp.LlamaGrammar.from_string(grammar_text, verbose=False)
        out = provider.llama.create_completion(
            prompt,
            max_tokens=len(wanted) + 40,
            temperature=0.0,
            grammar=grammar,
            logits_processor=llama_cpp.LogitsProcessorList([push_toward_wanted]),
        )
        return parse_reply(out["choices"][0]["text"]).tool_calls

    assert [c.name for c in run(None)] == ["shell_exec"]
    calls = run(mask_grammar(request.mask, request.tool_names))
    assert len(calls) == 1
    assert calls[0].name in ALLOWED


def test_without_a_mask_the_same_model_says_other_things(provider, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Read the readme."))
    request = builder.build(session)
    replies = [provider.complete(request) for _ in range(GENERATIONS)]
    assert any(r.content and not {c.name for c in r.tool_calls} & ALLOWED for r in replies)


def test_text_streams_before_the_reply_and_calls_never_stream(provider, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Say something."))
    events = list(provider.stream(builder.build(session)))
    assert isinstance(events[-1], ReplyDone)
    streamed = "".join(e.text for e in events[:-1] if isinstance(e, TextDelta))
    assert streamed.strip() == events[-1].reply.content
    forced = list(provider.stream(builder.build(session, mask=ToolMask.only("file_read"))))
    assert [type(e) for e in forced] == [ReplyDone]


def test_usage_counts_prompt_and_output_tokens(provider, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Count me."))
    request = builder.build(session)
    reply = provider.complete(request)
    assert reply.usage.input_tokens == len(provider.tokenize(render_prompt(request)))
    assert 1 <= reply.usage.output_tokens <= 160
    assert reply.usage.model == "tiny-llama"
    assert reply.finish_reason in {"stop", "length"}


def test_same_seed_same_replies(tiny_model, tmp_path):
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Anything."))
    request = builder.build(session)
    first, second = (
        LlamaCppProvider(tiny_model.gguf_path, n_ctx=1024, max_tokens=40, seed=7) for _ in range(2)
    )
    assert [first.complete(request).content for _ in range(3)] == [
        second.complete(request).content for _ in range(3)
    ]


def _predicted_reuse(provider, previous, request, monitor_chars):
    """Tokens a prefix cache can keep, from the prefix monitor's prediction.

    The monitor says the whole previous request is a prefix of this one (append-only
    session). In the prompt that is every turn the previous request rendered, plus the
    part of the previous generation prompt that the next turn repeats: the template
    opens every turn with ``<|im_start|>``, and an assistant turn with all of
    ``<|im_start|>assistant\\n``. So the reuse is one token more than the previous turns
    when a user or tool message comes next, and the whole previous prompt (header
    included) when the assistant's message comes next; the generated tokens after it
    never match here, since the history's assistant text differs from what was sampled.
    """
    assert monitor_chars == previous.total_chars
    shared = "".join(render_turns(previous.tools, previous.messages))
    next_turn = render_turns(request.tools, request.messages)[len(previous.messages)]
    text = shared + GENERATION_PROMPT[: common_prefix_len(GENERATION_PROMPT, next_turn)]
    tokens = provider.tokenize(text)
    assert provider.tokenize(render_prompt(request))[: len(tokens)] == tokens
    return len(tokens)


def test_reused_tokens_match_the_prefix_monitor(tiny_model, tmp_path):
    provider = LlamaCppProvider(tiny_model.gguf_path, n_ctx=4096, max_tokens=24, temperature=1.0)
    ctx = provider.llama.ctx
    session, builder = _new_session(tmp_path, "s")
    monitor = PrefixMonitor()
    mask = ToolMask.only("file_read", mode="required")  # replies start with <tool_call>
    grow = [
        lambda: session.append(UserEntry(text="Please read the readme.")),
        lambda: _step(session, 1),
        lambda: session.append(UserEntry(text="Now summarize it.")),
        lambda: _step(session, 2, text="Reading again."),
    ]
    previous = None
    checked = []
    for append in grow:
        append()
        request = builder.build(session, mask=mask)
        report = monitor.observe(request)
        llama_cpp.llama_perf_context_reset(ctx)
        usage = provider.complete(request).usage
        perf = llama_cpp.llama_perf_context(ctx)
        # The engine's own counters: prompt tokens evaluated + generated tokens fed back.
        assert (
            perf.n_p_eval + perf.n_eval
            == usage.input_tokens - usage.cached_tokens + usage.output_tokens - 1
        )
        if previous is None:
            assert usage.cached_tokens == 0
        else:
            expected = _predicted_reuse(provider, previous, request, report.reusable_chars)
            assert usage.cached_tokens == expected
            checked.append(request.messages[len(previous.messages)]["role"])
        previous = request
    assert checked == ["assistant", "user", "assistant"]


def test_repeating_a_prompt_reevaluates_its_last_token(tiny_model, tmp_path):
    """llama-cpp-python replays the last prompt token to get fresh logits."""
    provider = LlamaCppProvider(tiny_model.gguf_path, n_ctx=2048, max_tokens=8)
    session, builder = _new_session(tmp_path, "s")
    session.append(UserEntry(text="Hello."))
    request = builder.build(session)
    provider.complete(request)
    usage = provider.complete(request).usage
    assert usage.cached_tokens == usage.input_tokens - 1


@pytest.mark.parametrize("ram_cache", [True, False])
def test_alternating_sessions_keep_their_own_prefix_with_the_ram_cache(
    tiny_model, tmp_path, ram_cache
):
    provider = LlamaCppProvider(
        tiny_model.gguf_path,
        n_ctx=4096,
        max_tokens=24,
        ram_cache_bytes=256 * 2**20 if ram_cache else 0,
    )
    mask = ToolMask.only("file_read", mode="required")
    sessions = {name: _new_session(tmp_path, name) for name in ("alpha", "beta")}
    first = {}
    for name, (session, builder) in sessions.items():
        session.append(UserEntry(text=f"{name.capitalize()} task: read the readme."))
        first[name] = builder.build(session, mask=mask)
        provider.complete(first[name])
    other_prompt = render_prompt(first["beta"])
    for name, (session, builder) in sessions.items():
        _step(session, 1)
        request = builder.build(session, mask=mask)
        cached = provider.complete(request).usage.cached_tokens
        own = len(provider.tokenize(render_prompt(first[name])))
        if ram_cache:
            assert cached == own
        else:
            # Only the last sequence stays in the engine, and it is the other session's:
            # the two share just the system turn and "<|im_start|>user\n".
            prompt = render_prompt(request)
            shared = prompt[: common_prefix_len(prompt, other_prompt)]
            assert shared.endswith("<|im_start|>user\n")
            assert cached == len(provider.tokenize(shared)) < own
            other_prompt = prompt
    assert provider.llama.cache is None or len(provider.llama.cache.cache_state) == 4


def test_user_errors_have_clear_messages(tiny_model, tmp_path):
    with pytest.raises(ConfigError, match="model file not found"):
        LlamaCppProvider(tmp_path / "missing.gguf")
    (tmp_path / "broken.gguf").write_bytes(b"GGUF not really")
    with pytest.raises(ProviderError, match="cannot load local model"):
        LlamaCppProvider(tmp_path / "broken.gguf")
    provider = LlamaCppProvider(tiny_model.gguf_path, n_ctx=256)
    session, builder = _new_session(tmp_path, "s", system="word " * 400)
    session.append(UserEntry(text="hi"))
    with pytest.raises(ProviderError, match=r"more than the context window \(n_ctx=256\)"):
        provider.complete(builder.build(session))
    with pytest.raises(ProviderError, match="allows none of the tools"):
        provider.complete(builder.build(session, mask=ToolMask.only("memory_")))
