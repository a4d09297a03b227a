import pytest

from contextengine.errors import ContextEngineError
from contextengine.measure.recall import mean_recall, request_text, step_recall, step_references
from contextengine.measure.trajectory import parse_trajectory
from contextengine.prices import (
    DEFAULT_FAMILY,
    RECORDED,
    Prices,
    load_price_table,
    model_prices,
    priced_model,
    prices_for,
    replay_prices,
    usd,
)


def test_sonnet_prices_charge_each_kind_of_token() -> None:
    """The replay's default prices: the bench's ratios depend on exactly these."""
    sonnet = prices_for("claude-sonnet")
    assert DEFAULT_FAMILY == "claude-sonnet"
    assert sonnet.cost(1_000_000, 0, 0, 0) == pytest.approx(3.0)
    assert sonnet.cost(0, 1_000_000, 0, 0) == pytest.approx(0.30)
    assert sonnet.cost(0, 0, 1_000_000, 0) == pytest.approx(3.75)
    assert sonnet.cost(0, 0, 0, 1_000_000) == pytest.approx(15.0)
    with pytest.raises(ContextEngineError, match="unknown price family 'x'"):
        prices_for("x")


def test_a_family_is_priced_as_its_model_and_any_other_name_as_itself() -> None:
    assert priced_model("claude-sonnet") == "claude-sonnet-4-6"
    assert priced_model("deepseek/deepseek-chat") == "deepseek/deepseek-chat"
    assert prices_for("claude-sonnet") == model_prices(priced_model("claude-sonnet"))


@pytest.mark.parametrize(
    ("model", "prices"),
    [
        ("claude-opus-4-6", Prices(5.0, 0.50, 6.25, 25.0)),
        ("claude-3-5-sonnet-20241022", Prices(3.0, 0.30, 3.75, 15.0)),
        ("claude-haiku-4-5-20251001", Prices(1.0, 0.10, 1.25, 5.0)),
        ("gpt-4.1-mini", Prices(0.4, 0.10, 0.4, 1.6)),
        ("gpt-4o", Prices(2.5, 1.25, 2.5, 10.0)),
        ("gpt-5", Prices(1.25, 0.125, 1.25, 10.0)),
        ("o3", Prices(2.0, 0.5, 2.0, 8.0)),
    ],
)
def test_models_are_priced_from_genai_prices(model: str, prices: Prices) -> None:
    assert model_prices(model) == prices
    assert prices_for(model) == prices, "--prices also takes a model name"


@pytest.mark.parametrize("model", ["scripted", "my-finetune", "Qwen/Qwen2.5-Coder-7B-Instruct"])
def test_unknown_models_have_no_price_never_sonnets(model: str) -> None:
    assert model_prices(model) is None
    assert usd(None) == "price unknown" and usd(0.5) == "$0.5000"
    with pytest.raises(ContextEngineError, match="unknown price family"):
        prices_for(model)


@pytest.mark.parametrize(
    ("routed", "model"),
    [
        ("anthropic/claude-opus-4-6", "claude-opus-4-6"),
        ("openai/gpt-4o", "gpt-4o"),
        ("google/gemini-2.5-pro", "gemini-2.5-pro"),
    ],
)
def test_a_routed_model_name_is_priced_as_the_model(routed: str, model: str) -> None:
    assert model_prices(routed) == model_prices(model) is not None


def test_time_of_day_prices_are_the_standard_tier_at_any_hour() -> None:
    """DeepSeek halves its prices off-peak (16:30-00:30 UTC): a replay must not cost half
    as much because it ran at night."""
    assert model_prices("deepseek-chat") == Prices(0.27, 0.07, 0.27, 1.1)


def test_a_gemini_model_is_priced_as_itself() -> None:
    gemini = model_prices("gemini-2.5-pro")
    assert gemini is not None and gemini != prices_for(DEFAULT_FAMILY)
    assert gemini.input == pytest.approx(1.25), "the base tier, below 200k tokens"


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


def test_replay_prices_resolve_recorded_to_the_run_model_or_the_default() -> None:
    assert replay_prices("gpt-4o", "gemini-2.5-pro") == "gpt-4o"
    assert replay_prices(RECORDED, "gemini-2.5-pro") == "gemini-2.5-pro"
    assert replay_prices(RECORDED, "my-finetune") == DEFAULT_FAMILY


def test_load_price_table_reads_the_bundled_prices_once_and_for_all() -> None:
    # genai-prices keeps its bundled table in this cached function (what get_snapshot reads)
    from genai_prices.data_snapshot import _bundled_snapshot

    _bundled_snapshot.cache_clear()
    load_price_table()
    assert _bundled_snapshot.cache_info().currsize == 1, "the table every turn is priced from"
