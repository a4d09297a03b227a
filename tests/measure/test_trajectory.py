from pathlib import Path
from typing import Any

import pytest

from contextengine.errors import TrajectoryError
from contextengine.measure.trajectory import load_trajectory, parse_trajectory

from .conftest import cli, write_json

GOOD_STEP = {"assistant": "a", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"steps": []}, "task: required field is missing"),
        ({"task": "t"}, "steps: required field is missing"),
        ({"task": "t", "steps": {}}, "steps: expected a list"),
        ({"task": "t", "steps": [GOOD_STEP, 3]}, "steps[1]: expected an object"),
        ({"task": "t", "steps": [{"assistant": 7}]}, "steps[0].assistant: expected a string"),
        (
            {
                "task": "t",
                "steps": [GOOD_STEP, GOOD_STEP, GOOD_STEP, {"tool_calls": [{"name": 1}]}],
            },
            "steps[3].tool_calls[0].name: expected a string",
        ),
        (
            {"task": "t", "steps": [{"tool_calls": [{"arguments": {}}]}]},
            "steps[0].tool_calls[0].name: required field is missing",
        ),
        (
            {"task": "t", "steps": [{"tool_calls": [{"name": "x", "arguments": [1]}]}]},
            "steps[0].tool_calls[0].arguments: expected an object",
        ),
        (
            {"task": "t", "steps": [{"is_error": "yes"}]},
            "steps[0].is_error: expected true or false",
        ),
        ({"task": "t", "steps": [{"user": 3}]}, "steps[0].user: expected a string"),
        (
            {"task": "t", "steps": [], "tools": [{"description": "no name"}]},
            "tools[0]: a tool needs a 'name'",
        ),
        (
            {
                "task": "t",
                "steps": [],
                "tools": [{"name": "a"}, {"type": "function", "function": {"name": "a"}}],
            },
            "tools[1]: duplicate tool name 'a'",
        ),
        ([1, 2], "expected a JSON object at the top level"),
        ({"task": "t", "steps": []}, "steps: expected at least one item"),
        (
            {
                "task": "t",
                "steps": [{"tool_calls": [{"name": "a", "arguments": {"x": float("nan")}}]}],
            },
            "nan has no JSON form",
        ),
    ],
)
def test_malformed_trajectories_name_the_field(data: Any, field: str) -> None:
    with pytest.raises(TrajectoryError) as caught:
        parse_trajectory(data, "run.json")
    assert str(caught.value) == f"run.json: {field}"


def test_documented_shape_with_optional_parts_and_unknown_keys() -> None:
    recording = parse_trajectory(
        {
            "task": "t",
            "meta": {"anything": [1]},
            "extra": True,
            "tools": [
                {"type": "function", "function": {"name": "b", "parameters": {}}},
                {"name": "a"},
            ],
            "steps": [
                {"assistant": "x", "tool_calls": None, "observation": None, "unknown": 1},
                {
                    "assistant": "y",
                    "tool_calls": [{"name": "a", "arguments": "{raw"}],
                    "reasoning": "r",
                },
                {"user": "more", "assistant": "z"},
            ],
        }
    )
    assert recording.system == "" and [t.name for t in recording.tool_specs] == ["a", "b"]
    assert recording.steps[0].tool_calls == () and recording.steps[0].observation == ""
    assert recording.steps[1].tool_calls[0].arguments_json == "{raw"
    assert recording.steps[2].user == "more"
    assert recording.native_calls


def test_the_cli_reports_a_malformed_file_in_one_line_with_exit_code_2(tmp_path: Path) -> None:
    bad = write_json(
        tmp_path / "bad.json", {"task": "t", "steps": [GOOD_STEP, {"tool_calls": [{"name": ""}]}]}
    )
    done = cli("replay", bad, "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"contextengine: error: {bad}: steps[1].tool_calls[0].name: expected a non-empty string"
    )
    broken = tmp_path / "broken.json"
    broken.write_text('{"task": ', encoding="utf-8")
    done = cli("replay", broken)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"{broken}: not valid JSON" in done.stderr
    missing = cli("replay", tmp_path / "missing.json")
    assert missing.returncode == 2 and "missing.json: cannot read" in missing.stderr


def test_bad_flags_are_one_line_errors(tmp_path: Path) -> None:
    path = write_json(tmp_path / "ok.json", {"task": "t", "steps": [{"assistant": "done"}]})
    for args, message in [
        (("--flags", "nonsense=1"), "--flags: unknown setting 'nonsense'"),
        (("--flags", "diversity=maybe"), "--flags: diversity='maybe': expected on or off"),
        (("--history-mode", "everything"), "--flags: setting 'history_mode'"),
        (("--prices", "free"), "unknown price family 'free'"),
    ]:
        done = cli("replay", path, *args)
        assert done.returncode == 2
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_load_trajectory_reads_the_shipped_samples() -> None:
    from .conftest import NATIVE_SAMPLE, TEXT_SAMPLE

    native, text = load_trajectory(NATIVE_SAMPLE), load_trajectory(TEXT_SAMPLE)
    assert native.native_calls and not text.native_calls
    assert native.source and native.license and text.source and text.license
