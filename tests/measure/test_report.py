import json
from pathlib import Path

import pytest

from contextengine import Agent, Config, ScriptedProvider
from contextengine.measure.report import load_usage, usage_report
from contextengine.prices import prices_for

from .conftest import cli


@pytest.fixture(scope="module")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real session made by the agent loop with a scripted model."""
    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "notes.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    provider = ScriptedProvider(
        [
            {
                "content": "Reading.",
                "tool_calls": [{"name": "file_read", "arguments": {"path": "notes.txt"}}],
            },
            {
                "content": "Counting.",
                "tool_calls": [{"name": "shell_exec", "arguments": {"command": "wc -l notes.txt"}}],
            },
            {"content": "notes.txt has two lines: alpha and beta."},
        ],
        model="claude-sonnet-4-5",
    )
    agent = Agent(provider=provider, workspace=workspace, config=Config())
    result = agent.run("How many lines does notes.txt have?")
    assert result.status == "completed"
    return result.session_dir


def test_report_json_totals_match_the_usage_log(session_dir: Path) -> None:
    done = cli("report", session_dir, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    lines = [json.loads(line) for line in (session_dir / "usage.jsonl").read_text().splitlines()]
    assert report["calls"] == len(lines) == 3
    for key in ("input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens"):
        assert report[key] == sum(line[key] for line in lines), key
    assert report["hit_rate"] == round(report["cached_tokens"] / report["input_tokens"], 4)
    sonnet = prices_for("claude-sonnet")
    expected = sum(
        sonnet.cost(
            line["input_tokens"] - line["cached_tokens"] - line["cache_write_tokens"],
            line["cached_tokens"],
            line["cache_write_tokens"],
            line["output_tokens"],
        )
        for line in lines
    )
    assert report["cost_usd"] == pytest.approx(expected, abs=1e-6)
    no_cache = sum(sonnet.cost(line["input_tokens"], 0, 0, line["output_tokens"]) for line in lines)
    assert report["savings_usd"] == pytest.approx(no_cache - expected, abs=1e-6)
    assert report["savings_usd"] > 0
    assert report["calls_by_purpose"] == {"main": 3}
    assert report["cache_breaks"] == []


def test_report_lists_cache_breaks_with_their_causes(tmp_path: Path, session_dir: Path) -> None:
    copy = tmp_path / "s"
    copy.mkdir()
    lines = (session_dir / "usage.jsonl").read_text().splitlines()
    broken = json.loads(lines[-1])
    broken["prefix"]["break"] = {
        "position": 12,
        "cause": "l2_changed",
        "old_snippet": "a",
        "new_snippet": "b",
    }
    (copy / "usage.jsonl").write_text("\n".join([*lines[:-1], json.dumps(broken)]) + "\n")
    report = usage_report(copy, load_usage(copy))
    assert report.cache_breaks == (
        {
            "call": broken["step"],
            "purpose": "main",
            "cause": "l2_changed",
            "position": 12,
            "old_snippet": "a",
            "new_snippet": "b",
        },
    )
    done = cli("report", copy)
    assert done.returncode == 0 and "l2_changed" in done.stdout


def test_report_plot_writes_a_png_and_the_human_table(session_dir: Path, tmp_path: Path) -> None:
    plot = tmp_path / "plots" / "usage.png"
    done = cli("report", session_dir, "--plot", plot)
    assert done.returncode == 0, done.stderr
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for words in ("cache hit rate", "savings", "claude-sonnet-4-5"):
        assert words in done.stdout


def test_report_prices_option_and_missing_session(session_dir: Path, tmp_path: Path) -> None:
    opus = json.loads(cli("report", session_dir, "--json", "--prices", "claude-opus").stdout)
    sonnet = json.loads(cli("report", session_dir, "--json").stdout)
    assert opus["prices"] == "claude-opus" and opus["cost_usd"] > sonnet["cost_usd"]
    done = cli("report", tmp_path / "nowhere")
    assert done.returncode == 2 and "not a folder" in done.stderr
    done = cli("report", tmp_path)
    assert done.returncode == 2 and "no usage.jsonl" in done.stderr


def test_a_model_without_a_known_price_is_reported_as_unknown(
    tmp_path: Path, session_dir: Path
) -> None:
    copy = tmp_path / "s"
    copy.mkdir()
    lines = [json.loads(line) for line in (session_dir / "usage.jsonl").read_text().splitlines()]
    lines[-1]["model"] = "my-finetune"
    (copy / "usage.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = json.loads(cli("report", copy, "--json").stdout)
    assert report["unpriced_models"] == ["my-finetune"]
    assert report["prices"] == "claude-sonnet-4-5, price unknown"
    whole = json.loads(cli("report", session_dir, "--json").stdout)
    assert 0 < report["cost_usd"] < whole["cost_usd"], "the unknown call is not priced as Sonnet"
    for line in lines:
        line["model"] = "my-finetune"
    (copy / "usage.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = cli("report", copy)
    assert done.returncode == 0 and "price unknown (my-finetune)" in done.stdout
    assert "$" not in done.stdout


def _diagnosed_copy(
    tmp_path: Path, session_dir: Path, verdicts: list[tuple[dict | None, str | None]]
) -> Path:
    """A copy of the session whose calls carry the given (provider diagnosis, monitor break
    cause) pairs."""
    copy = tmp_path / "diagnosed"
    copy.mkdir()
    lines = [json.loads(line) for line in (session_dir / "usage.jsonl").read_text().splitlines()]
    for line, (diagnosis, cause) in zip(lines, verdicts, strict=True):
        line["prefix"].pop("break", None)
        if diagnosis is not None:
            line["cache_diagnosis"] = diagnosis
        if cause is not None:
            line["prefix"]["break"] = {"position": 3, "cause": cause}
    (copy / "usage.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return copy


def _uncached_of_second_call(session_dir: Path) -> int:
    """The input tokens the session's second call neither read from nor wrote to the cache."""
    lines = [json.loads(line) for line in (session_dir / "usage.jsonl").read_text().splitlines()]
    return lines[1]["input_tokens"] - lines[1]["cached_tokens"] - lines[1]["cache_write_tokens"]


def test_report_lists_calls_where_the_provider_and_the_monitor_disagree(
    tmp_path: Path, session_dir: Path
) -> None:
    uncached = _uncached_of_second_call(session_dir)
    copy = _diagnosed_copy(
        tmp_path,
        session_dir,
        [
            ({"reason": "tools_changed", "missed_input_tokens": 500}, None),
            ({"reason": "none", "missed_input_tokens": 0}, "l1_changed"),
            # The messages diverged before the previous call's uncached part: a break.
            ({"reason": "messages_changed", "missed_input_tokens": uncached + 1}, None),
        ],
    )
    report = json.loads(cli("report", copy, "--json").stdout)
    assert report["cache_diagnosed_calls"] == 3
    assert report["cache_disagreements"] == [
        {"call": 1, "reason": "tools_changed", "missed_input_tokens": 500, "monitor": "stable"},
        {"call": 2, "reason": "none", "missed_input_tokens": 0, "monitor": "l1_changed"},
        {
            "call": 3,
            "reason": "messages_changed",
            "missed_input_tokens": uncached + 1,
            "monitor": "stable",
        },
    ]
    done = cli("report", copy)
    assert done.returncode == 0, done.stderr
    assert "provider/monitor disagreements" in done.stdout
    assert "3 of 3 diagnosed calls" in done.stdout
    assert "call 1: provider says tools_changed (500 input tokens missed), monitor says stable" in (
        done.stdout
    )
    assert "call 2: provider says none (0 input tokens missed), monitor says l1_changed" in (
        done.stdout
    )


def test_report_is_silent_when_the_provider_and_the_monitor_agree(
    tmp_path: Path, session_dir: Path
) -> None:
    uncached = _uncached_of_second_call(session_dir)
    copy = _diagnosed_copy(
        tmp_path,
        session_dir,
        [
            ({"reason": "pending", "missed_input_tokens": 0}, "tools_changed"),
            ({"reason": "system_changed", "missed_input_tokens": 90}, "l2_changed"),
            # A divergence inside the previous call's uncached tail is no break.
            ({"reason": "messages_changed", "missed_input_tokens": uncached}, None),
        ],
    )
    report = json.loads(cli("report", copy, "--json").stdout)
    assert report["cache_diagnosed_calls"] == 3
    assert report["cache_disagreements"] == []
    done = cli("report", copy)
    assert "0 of 3 diagnosed calls" in done.stdout and "provider says" not in done.stdout
    plain = json.loads(cli("report", session_dir, "--json").stdout)
    assert plain["cache_diagnosed_calls"] == 0 and plain["cache_disagreements"] == []
    assert "disagreements" not in cli("report", session_dir).stdout
