import pytest

from contextengine.errors import ContextEngineError
from contextengine.measure.prices import DEFAULT_FAMILY, family_of, prices_for
from contextengine.measure.recall import mean_recall, request_text, step_recall, step_references
from contextengine.measure.trajectory import parse_trajectory


def test_sonnet_prices_charge_each_kind_of_token() -> None:
    sonnet = prices_for("claude-sonnet")
    assert DEFAULT_FAMILY == "claude-sonnet"
    assert sonnet.cost(1_000_000, 0, 0, 0) == pytest.approx(3.0)
    assert sonnet.cost(0, 1_000_000, 0, 0) == pytest.approx(0.30)
    assert sonnet.cost(0, 0, 1_000_000, 0) == pytest.approx(3.75)
    assert sonnet.cost(0, 0, 0, 1_000_000) == pytest.approx(15.0)
    with pytest.raises(ContextEngineError, match="unknown price family 'x'"):
        prices_for("x")


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-opus-4-6", "claude-opus"),
        ("claude-3-5-sonnet-20241022", "claude-sonnet"),
        ("claude-haiku-4-5-20251001", "claude-haiku"),
        ("gpt-4.1-mini", "gpt-4.1"),
        ("gpt-4o", "gpt-4o"),
        ("scripted", "claude-sonnet"),
    ],
)
def test_models_map_to_price_families(model: str, family: str) -> None:
    assert family_of(model) == family


def test_references_come_from_earlier_observations_only() -> None:
    recording = parse_trajectory(
        {
            "system": "use system_tool_name",
            "task": "fix task_identifier",
            "steps": [
                {
                    "assistant": "look at parse_config",
                    "observation": "def parse_config(): load_settings()",
                },
                {
                    "assistant": "parse_config calls load_settings; also task_identifier and system_tool_name",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": "grep -n load_settings src/app.py"},
                        }
                    ],
                    "observation": "src/app.py:3",
                },
                {"assistant": "src/app.py line 3 has invented_name"},
            ],
        }
    )
    refs = step_references(recording)
    assert refs[0] == frozenset()  # nothing observed before the first step
    assert refs[1] == {"parse_config", "load_settings"}  # task/system names excluded
    assert refs[2] == {"src/app.py"}
    text = request_text([{"role": "user", "content": "parse_config only"}], [])
    assert step_recall(refs[1], text) == 0.5
    assert step_recall(frozenset(), text) is None
    assert mean_recall([None, 0.5, 1.0]) == 0.75 and mean_recall([None]) is None
