"""A final answer cut at max_tokens (finish_reason ``length``) is asked for again, then marked."""

from __future__ import annotations

from pathlib import Path

from contextengine import Agent, Config, ScriptedProvider
from contextengine.agent.events import Done, ErrorEvent

CUT = {"content": "The fix is to change the Task_", "finish_reason": "length"}
WHOLE = {"content": "The fix is to rename Task_ to Task in models.py and rerun the tests."}


def test_a_cut_answer_is_asked_for_again(tmp_path: Path) -> None:
    provider = ScriptedProvider([CUT, WHOLE])
    events = list(Agent(provider, tmp_path, Config()).stream("What is the fix?"))
    done = events[-1]
    assert isinstance(done, Done) and done.result.final_answer == WHOLE["content"]
    assert [e.error_class for e in events if isinstance(e, ErrorEvent)] == ["reply_cut"]
    retry = provider.requests[1].messages
    assert any("max_tokens" in str(m["content"]) for m in retry if m["role"] == "user")


def test_an_answer_cut_twice_is_given_and_marked_as_cut(tmp_path: Path) -> None:
    provider = ScriptedProvider([CUT, CUT])
    events = list(Agent(provider, tmp_path, Config()).stream("What is the fix?"))
    done = events[-1]
    assert isinstance(done, Done) and done.result.status == "completed"
    assert done.result.final_answer == CUT["content"]
    cuts = [e for e in events if isinstance(e, ErrorEvent) and e.error_class == "reply_cut"]
    assert len(cuts) == 2 and "cut off" in cuts[1].message
