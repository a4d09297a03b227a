"""``ContextMirror`` without a framework: neutral messages in, the engine's view out."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contextengine import Config
from contextengine.integrations.mirror import (
    ContextMirror,
    MissingIntegration,
    require,
)
from contextengine.memory.status import FULL_EVERY
from integrations.scenario import TAIL, same_or_pruned


def _call(call_id: str, name: str, arguments: str) -> dict:
    return {
        "role": "assistant",
        "content": f"calling {name}",
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def _result(call_id: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _conversation(outputs: list[str]) -> list[dict]:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}]
    for n, text in enumerate(outputs):
        messages += [_call(f"c{n}", "run", json.dumps({"z": n, "a": "x"})), _result(f"c{n}", text)]
    return messages


def _persisted(messages: list[dict]) -> list[dict]:
    return [m for m in messages if not str(m.get("content")).startswith(TAIL)]


outputs = st.lists(
    st.one_of(st.text(max_size=40), st.just("x" * 4000), st.just("y\n" * 3000)), max_size=8
)


@given(outputs)
def test_each_view_extends_the_previous_one(
    tmp_path_factory: pytest.TempPathFactory, texts: list[str]
) -> None:
    mirror = ContextMirror(tmp_path_factory.mktemp("s"), config=Config())
    conversation = _conversation(texts)
    previous: list[dict] = []
    for end in range(2, len(conversation) + 1, 2):
        view = mirror.view(conversation[:end])
        assert len(view) > len(previous)
        assert all(map(same_or_pruned, previous, view))
        previous = _persisted(view)
    assert mirror.session.directory.name == "part-000", "a history that only grew is one session"
    assert mirror.session.rewrite in (None, "prune"), "only pruning rewrote it"


def test_system_messages_pass_and_arguments_become_canonical(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path, config=Config())
    view = mirror.view(_conversation(["ok"]))
    assert view[0] == {"role": "system", "content": "Be brief."}
    assert view[2]["tool_calls"][0]["function"]["arguments"] == '{"a":"x","z":0}'
    assert view[3]["content"] == "ok"


def test_a_big_output_is_externalized_and_read_back(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path, config=Config())
    big = "".join(f"row {n} value_{n}\n" for n in range(2000))
    view = mirror.view(_conversation([big]))
    ref = json.loads(view[-1]["content"].split("\n", 1)[0])
    assert ref["_type"] == "compressed_ref" and big not in json.dumps(view)
    assert mirror.file_read(ref["path"]) == big
    assert mirror.file_read(ref["path"], 2, 3) == "row 1 value_1\nrow 2 value_2\n"


def test_a_todo_list_becomes_the_task_status_tail_once_it_is_out_of_view(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path, config=Config())
    todos = {"todos": [{"content": "Write it", "status": "in_progress"}]}
    messages = [{"role": "user", "content": "Go."}, _call("t", "todo", json.dumps(todos))]
    messages.append(_result("t", "saved"))
    assert not mirror.view(messages)[-1]["content"].startswith(TAIL)  # the call just said it
    for n in range(FULL_EVERY):
        messages += [_call(f"r{n}", "run", "{}"), _result(f"r{n}", "ran")]
        view = mirror.view(messages)
        assert view[-1]["role"] == "tool", "the plan is close by: the request is left as is"
    far = "x" * Config().recite_after_chars
    messages += [_call("far", "run", "{}"), _result("far", far)]
    view = mirror.view(messages)
    assert view[-1]["role"] == "user" and view[-1]["content"].startswith(TAIL)
    assert "Write it" in view[-1]["content"], "out of recent view: recited"
    messages += [_call("next", "run", "{}"), _result("next", "ran")]
    assert mirror.view(messages)[-1]["role"] == "tool", "just recited"


def test_a_rewritten_history_starts_a_new_session(tmp_path: Path) -> None:
    mirror = ContextMirror(tmp_path, config=Config(), session_key="key")
    mirror.view(_conversation(["a", "b"]))
    first = mirror.session.id
    view = mirror.view(_conversation(["c"]))
    assert mirror.session.id != first and mirror.session_key == "key"
    assert view[-1]["content"] == "c"


def test_old_outputs_are_pruned_when_the_cache_pays_and_stay_readable(tmp_path: Path) -> None:
    config = Config(
        prune_min_batch_tokens=500,
        prune_keep_recent=1,
        prune_horizon=4.0,
        prune_risk_share=1.0,  # a short history has banked nothing: let it bet
    )
    mirror = ContextMirror(tmp_path, config=config)
    texts = [f"output {n} " + "word " * 500 for n in range(12)]
    conversation = _conversation(texts)
    for end in range(4, len(conversation) + 1, 2):
        view = mirror.view(conversation[:end])
    assert mirror.session.rewrite == "prune"
    stubs = [m["content"] for m in view if str(m.get("content")).startswith("[pruned:")]
    path = stubs[0].split("saved at ", 1)[1].split("]", 1)[0]
    assert mirror.file_read(path) == texts[0]


def test_pruning_weighs_the_named_models_cache_prices(tmp_path: Path) -> None:
    deepseek = ContextMirror(tmp_path / "d", config=Config(), model="deepseek/deepseek-chat")
    cache = deepseek.pruner.cache
    assert (cache.read_price, cache.write_price) == pytest.approx((0.07 / 0.27, 1.0))
    unknown = ContextMirror(tmp_path / "u", config=Config()).pruner.cache
    assert (unknown.read_price, unknown.write_price) == (0.1, 1.25)


def test_a_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingIntegration, match=r"pip install 'contextengine\[x-extra\]'"):
        require("contextengine_no_such_framework", "x-extra")
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "contextengine.integrations.pydantic_ai", raising=False)
    with pytest.raises(MissingIntegration, match=r"contextengine\[pydantic-ai\]"):
        importlib.import_module("contextengine.integrations.pydantic_ai")
