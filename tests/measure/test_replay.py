import json
import re
from pathlib import Path
from typing import Any

import pytest

from contextengine import Config
from contextengine.agent.parts import AgentRecipe
from contextengine.measure.playback import SHARED_OBSERVATION
from contextengine.measure.replay import Replayer, replay
from contextengine.measure.trajectory import Trajectory, load_trajectory, parse_trajectory

from .conftest import NATIVE_SAMPLE, TEXT_SAMPLE, cli, write_json
from .recompute import recompute

KEYS = {
    "steps",
    "prefix_reuse",
    "ideal_prefix_reuse",
    "input_tokens",
    "cached_tokens",
    "uncached_tokens",
    "content_tokens",
    "cost_usd",
    "input_cost_usd",
    "floor_usd",
    "reference_recall",
    "cache_breaks",
}


def run_json(*args: str | Path) -> dict[str, Any]:
    done = cli("replay", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def dumped(directory: Path, name: str) -> dict[str, Any]:
    return json.loads((directory / name).read_text(encoding="utf-8"))


def test_replay_json_of_a_shipped_sample_has_every_key_for_engine_and_baselines(
    tmp_path: Path,
) -> None:
    figures = run_json(NATIVE_SAMPLE, "--dump", tmp_path)
    recording = json.loads(NATIVE_SAMPLE.read_text(encoding="utf-8"))
    assert set(figures) >= KEYS
    assert {"full_history", "sliding_window"} <= set(figures["baselines"])
    for baseline in figures["baselines"].values():
        assert set(baseline) >= KEYS
        assert baseline["steps"] == len(recording["steps"])
    assert figures["steps"] == len(recording["steps"])
    assert figures["baselines"]["full_history"]["reference_recall"] == 1.0
    assert figures["cache_breaks"] == []
    assert figures["recorded"] is None, "a trajectory file says nothing of what was billed"
    assert figures["input_tokens"] == (
        figures["cached_tokens"] + figures["cache_write_tokens"] + figures["uncached_tokens"]
    )
    assert len(list(tmp_path.glob("request-*.json"))) == len(recording["steps"])


@pytest.mark.parametrize("sample", [NATIVE_SAMPLE, TEXT_SAMPLE], ids=["native", "text"])
def test_figures_are_recomputed_from_the_dump_independently(sample: Path, tmp_path: Path) -> None:
    # the script prices at Sonnet's prices, hard-coded: no genai-prices
    figures = run_json(sample, "--dump", tmp_path, "--prices", "claude-sonnet")
    again = recompute(tmp_path, json.loads(sample.read_text(encoding="utf-8")))
    for key in (
        "steps",
        "input_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "uncached_tokens",
        "output_tokens",
        "prefix_reuse",
        "ideal_prefix_reuse",
        "content_tokens",
        "cost_usd",
        "input_cost_usd",
        "floor_usd",
        "reference_recall",
    ):
        assert again[key] == figures[key], key
    assert again["cache_breaks"] == len(figures["cache_breaks"])
    assert [s["purpose"] for s in again["side_calls"]] == [
        s["purpose"] for s in figures["side_calls"]
    ]
    assert [s["cached_tokens"] for s in again["side_calls"]] == [
        s["cached_tokens"] for s in figures["side_calls"]
    ]


def test_compaction_summaries_are_side_calls_charged_cached_and_recomputable(
    multi_round: dict[str, Any], tmp_path: Path
) -> None:
    big = "\n".join(f"line {i}: value_{i} = compute_{i}()" for i in range(400))
    multi_round["steps"][0]["observation"] = big
    multi_round["steps"][1]["observation"] = big.replace("value", "other")
    path = write_json(tmp_path / "run.json", multi_round)
    dump = tmp_path / "dump"
    figures = run_json(
        path,
        "--dump",
        dump,
        "--flags",
        "keep_rounds=1,history_mode=full,externalize=off,pruning=off",
        "--context-window",
        "6000",
    )
    summaries = [s for s in figures["side_calls"] if s["purpose"] == "summary"]
    assert summaries, figures["side_calls"]
    side = dumped(dump, "side-0000.json")
    assert side["purpose"] == "summary"
    assert side["output"][0].startswith("## 📌 Archived Session Summary")
    assert any(b["cause"] == "compaction" for b in figures["cache_breaks"])
    assert all(b["cause"] == "compaction" for b in figures["cache_breaks"])
    again = recompute(dump, multi_round)
    assert again["cost_usd"] == figures["cost_usd"]
    assert again["cached_tokens"] == figures["cached_tokens"]
    assert [s["cached_tokens"] for s in again["side_calls"]] == [
        s["cached_tokens"] for s in figures["side_calls"]
    ]


def test_rounds_parallel_calls_errors_and_reasoning_replay_in_order(
    multi_round: dict[str, Any], tmp_path: Path
) -> None:
    path = write_json(tmp_path / "run.json", multi_round)
    figures = run_json(path, "--dump", tmp_path / "dump")
    assert figures["steps"] == 6
    assert len(list((tmp_path / "dump").glob("request-*.json"))) == 6
    second = dumped(tmp_path / "dump", "request-0002.json")
    texts = [m.get("content") or "" for m in second["messages"]]
    assert any("def helper_59(value)" in t for t in texts)  # step 1's observation, in full
    assert any(SHARED_OBSERVATION in t for t in texts)  # the parallel call's pointer
    assert not any("module_7 looks relevant" in t for t in texts)  # reasoning is not sent
    fifth = dumped(tmp_path / "dump", "request-0004.json")
    users = [m["content"] for m in fifth["messages"] if m["role"] == "user"]
    assert any(u.startswith("Please also check helper_7.") for u in users)
    finals = [m for m in fifth["messages"] if m["role"] == "assistant" and not m.get("tool_calls")]
    assert finals[-1]["content"] == "helper_42 multiplies by the wrong factor; fixed it."


def test_text_protocol_run_without_tools_or_calls(
    text_protocol: dict[str, Any], tmp_path: Path
) -> None:
    path = write_json(tmp_path / "run.json", text_protocol)
    figures = run_json(path, "--dump", tmp_path / "dump")
    assert figures["steps"] == 4
    last = dumped(tmp_path / "dump", "request-0003.json")
    assert last["tools"] == []
    assert last["messages"][0] == {"role": "system", "content": text_protocol["system"]}
    contents = [m["content"] for m in last["messages"]]
    assert "THOUGHT: look around\n\n```bash\nls -la\n```" in contents
    assert any("version = 4.2.1" in c for c in contents)
    assert any("Format error." in c for c in contents)
    assert all(m["role"] in {"system", "user", "assistant"} for m in last["messages"])
    again = recompute(tmp_path / "dump", text_protocol)
    assert again["cost_usd"] == figures["cost_usd"]


def _chat(rounds: int, step: dict[str, Any]) -> dict[str, Any]:
    """A run of ``rounds`` user turns, each one ``step`` and a prose answer to the user."""
    steps: list[dict[str, Any]] = []
    for k in range(rounds):
        steps.append({**step, **({"user": f"And now case {k}?"} if k else {})})
        steps.append({"assistant": f"Case {k} is handled: nothing else to change there."})
    return {"task": "Go through the cases.", "steps": steps}


def _requests_text(directory: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(directory.glob("*.json")))


def test_a_text_protocol_run_ends_each_round_on_its_recorded_prose_answer(
    tmp_path: Path,
) -> None:
    step = {"assistant": "THOUGHT: check\n\n```bash\nls cases\n```", "observation": "a b c"}
    recording = _chat(4, step)
    assert not parse_trajectory(recording, "chat").native_calls
    figures = run_json(write_json(tmp_path / "chat.json", recording), "--dump", tmp_path / "d")
    assert figures["steps"] == 8
    assert figures["side_calls"] == []  # no invalid replies, so no 3-strike reboot
    assert "Action:" not in _requests_text(tmp_path / "d")
    last = dumped(tmp_path / "d", "request-0007.json")["messages"]
    assert all(m["role"] in {"system", "user", "assistant"} for m in last)


def test_calls_without_ids_or_declared_tools_replay_as_native_calls(tmp_path: Path) -> None:
    """A converter that keeps neither schemas nor call ids (the trajectory format names
    neither): the calls are not in the text, so the replay sends them as tool calls."""
    step = {"assistant": "", "tool_calls": [{"name": "ls", "arguments": {"path": "cases"}}]}
    recording = _chat(4, {**step, "observation": "a b c"})
    assert parse_trajectory(recording, "chat").native_calls
    figures = run_json(write_json(tmp_path / "chat.json", recording), "--dump", tmp_path / "d")
    assert figures["side_calls"] == []
    assert "Action:" not in _requests_text(tmp_path / "d")
    last = dumped(tmp_path / "d", "request-0007.json")["messages"]
    calls = [c for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert [c["function"]["name"] for c in calls] == ["ls"] * 4
    assert sum(m["role"] == "tool" for m in last) == 4
    assert figures["input_cost_usd"] <= figures["baselines"]["full_history"]["input_cost_usd"]


def test_a_short_final_answer_and_a_round_ending_on_tool_calls_keep_the_alignment(
    multi_round: dict[str, Any], tmp_path: Path
) -> None:
    multi_round["steps"][3]["assistant"] = "Done."  # the engine retries answers under 10 chars
    del multi_round["steps"][5]  # the last round now ends on a tool call
    path = write_json(tmp_path / "run.json", multi_round)
    figures = run_json(path, "--dump", tmp_path / "dump")
    assert figures["steps"] == 5
    fifth = dumped(tmp_path / "dump", "request-0004.json")
    contents = [m.get("content") or "" for m in fifth["messages"]]
    assert "Done." in contents
    assert contents.count("Done.") == 1


def test_first_step_with_a_user_message(tmp_path: Path) -> None:
    recording = {
        "task": "Start.",
        "steps": [
            {
                "user": "Actually, list the files.",
                "assistant": "",
                "tool_calls": [{"name": "ls"}],
                "observation": "a.txt",
            },
            {"assistant": "There is one file, a.txt."},
        ],
    }
    figures = run_json(write_json(tmp_path / "run.json", recording), "--dump", tmp_path / "d")
    assert figures["steps"] == 2
    first = dumped(tmp_path / "d", "request-0000.json")
    users = [m["content"] for m in first["messages"] if m["role"] == "user"]
    assert [u for u in users if not u.startswith("<system-reminder>")][:2] == [
        "Start.",
        "Actually, list the files.",
    ]


def test_flags_and_history_modes_change_the_engine_not_the_baselines(tmp_path: Path) -> None:
    default = run_json(NATIVE_SAMPLE)
    plain = run_json(NATIVE_SAMPLE, "--flags", "enabled=off")
    assert plain["flags"]["diversity"] is False and plain["history_mode"] == "full"
    assert plain["cost_usd"] == default["baselines"]["full_history"]["cost_usd"]
    assert plain["baselines"] == default["baselines"]
    compressed = run_json(NATIVE_SAMPLE, "--history-mode", "compressed")
    assert compressed["history_mode"] == "compressed"


def test_replay_is_deterministic() -> None:
    recording = load_trajectory(TEXT_SAMPLE)
    first = replay(recording, AgentRecipe()).as_dict()
    second = replay(recording, AgentRecipe()).as_dict()
    assert first == second


def test_sliding_window_keeps_system_task_and_at_most_eight_messages(
    multi_round: dict[str, Any],
) -> None:
    from contextengine.measure.replay import replay_engine
    from contextengine.measure.sliding_window import sliding_window
    from contextengine.measure.tokens import TokenCounter

    calls = replay_engine(parse_trajectory(multi_round), AgentRecipe.plain_chat(), TokenCounter())
    for call in calls:
        window = sliding_window(call.request)
        messages = window.messages
        assert messages[:2] == call.request.messages[:2]
        assert len(messages) <= 10
        assert (
            messages[2:] == call.request.messages[len(call.request.messages) - len(messages) + 2 :]
        )
        if len(call.request.messages) > 10:
            assert messages[2]["role"] != "tool"
        assert window.persisted_chunks == 3


def test_human_output_has_a_table_with_the_baselines() -> None:
    done = cli("replay", TEXT_SAMPLE)
    assert done.returncode == 0, done.stderr
    for word in ("engine", "full_history", "sliding_window", "reference_recall", "cost vs"):
        assert word in done.stdout


def test_a_recorded_todo_tool_is_the_plan_the_tail_recites(tmp_path: Path) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix the bug", "status": "in_progress"},
    ]
    ls = {"name": "Bash", "arguments": {"command": "ls"}}
    data = {
        "task": "Fix it.",
        "tools": [{"name": "TodoWrite"}, {"name": "Bash"}],
        "steps": [
            {
                "assistant": "Planning.",
                "tool_calls": [{"name": "TodoWrite", "arguments": {"todos": todos}}],
                "observation": "Todos have been modified successfully.",
            },
            {"assistant": "Looking.", "tool_calls": [ls], "observation": "a.py"},
            {"assistant": "Again.", "tool_calls": [ls], "observation": "a.py"},
            {"assistant": "The bug is fixed in a.py.", "observation": ""},
        ],
    }
    replay(parse_trajectory(data, "todo"), AgentRecipe(Config(overhead_share=None)), dump=tmp_path)
    tails = [
        json.loads((tmp_path / f"request-{n:04d}.json").read_text())["messages"][-1]["content"]
        for n in range(4)
    ]
    # a short history (Config.recite_after_chars): the focus line; the memory folder is
    # named with the first full status, once the history is long
    assert tails[0] == "No plan yet."
    assert tails[1] == "Focus: step 2", "the recorded list, just before, names the step"
    assert tails[2] == tails[3] == "Focus: step 2", "the step's text is in view already"
    long = tmp_path / "long"
    recipe = AgentRecipe(Config(overhead_share=None, recite_after_chars=0))
    replay(parse_trajectory(data, "todo"), recipe, dump=long)
    first = json.loads((long / "request-0000.json").read_text())["messages"][-1]["content"]
    assert first.endswith("task_plan.md, findings.md, progress.md.") and "No plan yet." in first


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (
            "write_todos",
            {
                "todos": [
                    {"description": "Read the code", "status": "completed"},
                    {"description": "Fix the bug", "status": "in_progress"},
                ]
            },
        ),
        (
            "update_plan",
            {
                "plan": [
                    {"step": "Read the code", "status": "completed"},
                    {"step": "Fix the bug", "status": "in_progress"},
                ]
            },
        ),
        (
            "task_tracker",
            {
                "command": "plan",
                "task_list": [
                    {"title": "Read the code", "status": "done"},
                    {"title": "Fix the bug", "status": "in_progress"},
                ],
            },
        ),
    ],
    ids=["gemini-cli", "codex", "openhands-sdk"],
)
def test_another_harness_plan_tool_is_the_plan_and_a_view_keeps_it(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    ls = {"name": "shell", "arguments": {"command": "ls"}}
    view = {"name": tool, "arguments": {"command": "view"}}
    data = {
        "task": "Fix it.",
        "steps": [
            {
                "assistant": "Planning.",
                "tool_calls": [{"name": tool, "arguments": arguments}],
                "observation": "Plan updated",
            },
            {"assistant": "Looking.", "tool_calls": [view], "observation": "2 tasks"},
            {"assistant": "Again.", "tool_calls": [ls], "observation": "a.py"},
        ],
    }
    replay(parse_trajectory(data, "plan"), AgentRecipe(Config(overhead_share=None)), dump=tmp_path)
    tails = [
        json.loads((tmp_path / f"request-{n:04d}.json").read_text())["messages"][-1]["content"]
        for n in range(1, 3)
    ]
    assert tails == ["Focus: step 2", "Focus: step 2"], "step 2 of the recorded plan, kept"


def test_refs_name_artifacts_where_a_live_session_keeps_them() -> None:
    """A ref or stub is read on every later request: the replay's paths are as long as a
    live session's of the default layout, not a short folder that flatters the engine."""
    from contextengine.measure.replay import replay_engine
    from contextengine.measure.tokens import TokenCounter
    from contextengine.session.layout import new_session_id

    calls = replay_engine(load_trajectory(NATIVE_SAMPLE), AgentRecipe(), TokenCounter())
    texts = [json.dumps(call.request.messages) for call in calls]
    refs = [t for t in texts if "compressed_ref" in t]
    assert refs, "the sample has outputs over the externalizing size"
    folders = {m for t in refs for m in re.findall(r"default/workspace/([^/]+)/artifacts/", t)}
    assert len(folders) == 1 and len(folders.pop()) == len(new_session_id())
    assert all(".contextengine/sessions/default/default/workspace/" in t for t in refs)


def _shell_run(
    observations: list[tuple[str, str]], tool: str = "bash", argv: bool = False
) -> dict[str, Any]:
    """A recorded run of ``tool`` calls, each failed (is_error) with the given observation;
    ``argv``: the command as Codex's ``["bash", "-lc", command]``."""
    steps: list[dict[str, Any]] = [
        {
            "assistant": f"Trying {command}.",
            "tool_calls": [
                {
                    "name": tool,
                    "arguments": {"command": ["bash", "-lc", command] if argv else command},
                }
            ],
            "observation": observation,
            "is_error": True,
        }
        for command, observation in observations
    ]
    steps.append({"assistant": "Done: nothing else to change."})
    return {"task": "Find where the parser is defined.", "steps": steps}


@pytest.mark.parametrize(
    "silent",
    [
        "<returncode>1</returncode>\n<output>\n</output>",  # mini-swe-agent
        "[Command finished with exit code 1]",  # OpenHands
        "Exit code 1",  # Claude Code
    ],
)
def test_recorded_searches_that_found_nothing_are_no_strikes(silent: str) -> None:
    greps = [(f"grep -n 'def parse{k}' src/app.py", silent) for k in range(4)]
    # no overhead limit: a strike would reboot at once, so none may be counted
    figures = Replayer(parse_trajectory(_shell_run(greps))).engine(
        AgentRecipe(Config(overhead_share=None))
    )
    assert figures.side_calls == ()


_GEMINI_SHELL = """Command: grep -n parse src/app.py
Directory: (root)
Output: (empty)
Error: (none)
Exit Code: 1
Signal: (none)
Background PIDs: (none)
Process Group PGID: 4242"""


@pytest.mark.parametrize(
    ("tool", "argv", "silent"),
    [
        ("shell", True, "Exit code: 1\nWall time: 0.1 seconds\nOutput:\n"),
        ("exec_command", False, "Exit code: 1\nWall time: 0 seconds\nOutput:"),
        ("run_shell_command", False, _GEMINI_SHELL),
        ("terminal", False, "[The command completed with exit code 1.]"),
        (
            "execute_bash",
            False,
            "{command}[Python Interpreter: /usr/bin/python]\n"
            "root@openhands-workspace:/workspace # \n[Command finished with exit code 1]",
        ),
    ],
    ids=["codex-shell", "codex-exec", "gemini-cli", "openhands-sdk", "openhands"],
)
def test_other_harnesses_searches_that_found_nothing_are_no_strikes(
    tool: str, argv: bool, silent: str
) -> None:
    commands = [f"grep -n 'def parse{k}' src/app.py" for k in range(4)]
    greps = [(c, silent.replace("{command}", c)) for c in commands]  # a terminal's echo
    figures = Replayer(parse_trajectory(_shell_run(greps, tool, argv))).engine(
        AgentRecipe(Config(overhead_share=None))
    )
    assert figures.side_calls == ()


def test_recorded_failures_with_a_message_or_of_other_commands_still_strike() -> None:
    said = "<returncode>1</returncode>\n<output>\nImportError: no module named app\n</output>"
    silent = "<returncode>1</returncode>\n<output>\n</output>"
    for run in (
        [("python3 -c 'import app'", said)] * 3,
        [("./check.sh", silent)] * 3,  # not a search: its status 1 is a failure
        [("grep -n x src/app.py", "<returncode>2</returncode>\n<output>\n</output>")] * 3,
        [("grep -n x src/app.py", _GEMINI_SHELL.replace("(empty)", "grep: src/app.py: denied"))]
        * 3,
    ):
        figures = Replayer(parse_trajectory(_shell_run(run))).engine(
            AgentRecipe(Config(overhead_share=None))
        )
        assert [s["purpose"] for s in figures.side_calls] == ["reboot"], run


def test_a_run_is_priced_at_its_own_model_by_default_else_at_sonnets() -> None:
    gemini = run_json(TEXT_SAMPLE)
    assert gemini["prices"] == "google/gemini-3-pro-preview"
    assert run_json(TEXT_SAMPLE, "--prices", "recorded") == gemini
    assert gemini["baselines"]["full_history"]["input_cost_usd"] != pytest.approx(
        run_json(TEXT_SAMPLE, "--prices", "claude-sonnet")["baselines"]["full_history"][
            "input_cost_usd"
        ]
    )
    assert run_json(NATIVE_SAMPLE)["prices"] == "claude-sonnet", "a model genai-prices lacks"
    assert Replayer(load_trajectory(TEXT_SAMPLE)).prices == "google/gemini-3-pro-preview"


def test_a_fallback_price_says_so_on_stderr_and_in_the_json() -> None:
    done = cli("replay", NATIVE_SAMPLE, "--json")
    assert json.loads(done.stdout)["prices_fallback"] is True
    model = json.loads(done.stdout)["model"]
    assert f"no known price for model {model!r}: priced as claude-sonnet" in done.stderr
    known = cli("replay", TEXT_SAMPLE, "--json")
    assert json.loads(known.stdout)["prices_fallback"] is False
    assert "no known price" not in known.stderr


def _reading_parts(count: int, repeats: int, **fields: str) -> Trajectory:
    """A run that reads ``count`` parts of ``repeats`` phrases each and never answers."""
    steps = [
        {
            "assistant": f"Reading part {k}.",
            "tool_calls": [{"name": "bash", "arguments": {"command": f"cat part_{k}.txt"}}],
            "observation": f"part_{k} " + "lorem ipsum dolor sit amet " * repeats,
        }
        for k in range(count)
    ]
    return parse_trajectory({"task": "Read every part.", "steps": steps, **fields})


def test_only_prunes_a_charged_request_carried_are_reported() -> None:
    # the last step is a call: the engine prunes for a request the recording never made
    trajectory = _reading_parts(30, 90)
    eager = Config().with_flags(
        prune_min_batch_tokens=1,
        prune_risk_share=1e6,
        prune_horizon=100,
        prune_max_payback=1000,
        prune_keep_recent=0,
    )
    prunes = Replayer(trajectory).engine(AgentRecipe(eager)).prunes
    assert len(prunes) > 5
    assert all(p["remaining_steps"] >= 1 for p in prunes)


def test_the_engine_prunes_at_the_cache_prices_the_replay_charges() -> None:
    trajectory = _reading_parts(40, 60, model="deepseek/deepseek-chat")
    # DeepSeek reads its cache at a quarter of the input price and has no write premium,
    # so a prune pays back far sooner than at Sonnet's tenth and 1.25
    assert Replayer(trajectory).engine(AgentRecipe()).prunes
    assert not Replayer(trajectory, prices="claude-sonnet").engine(AgentRecipe()).prunes
    chosen = Config(cache_read_price=0.1, cache_write_price=1.25)
    assert not Replayer(trajectory).engine(AgentRecipe(chosen)).prunes, "the config's prices win"
