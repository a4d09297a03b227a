"""``benchmarks/heldout.py``: runs of the public sources that are not public files, converted."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from contextengine.measure.trajectory import load_trajectory

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
REPO = "SWE-agent/mini-swe-agent"
# convert_more.py ships with the public trajectories, not with the repo.
CONVERTERS_VARIABLE = "CONTEXTENGINE_BENCH_CONVERTERS"
BASH_TOOL = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}


def heldout() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("heldout", BENCH / "heldout.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["heldout"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def run(task: str, steps: int) -> dict[str, object]:
    """A mini-swe-agent 2 trajectory of ``steps`` bash calls."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": task},
    ]
    for k in range(steps):
        arguments = json.dumps({"command": f"cat module_{k}.py"})
        messages.append(
            {
                "role": "assistant",
                "content": f"Reading module_{k}.py.",
                "tool_calls": [
                    {"id": f"t{k}", "function": {"name": "bash", "arguments": arguments}}
                ],
            }
        )
        messages.append(
            {"role": "tool", "content": f"<returncode>0</returncode>\ndef f_{k}(): ..."}
        )
    return {
        "messages": messages,
        "info": {
            "config": {"model": {"model_name": "deepseek/deepseek-chat"}},
            "mini_version": "2",
        },
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": task,
    }


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def mirrors(tmp_path: Path) -> tuple[Path, str]:
    """A mirror root holding one bare mirror of mini-swe-agent: three runs, one of them short."""
    work = tmp_path / "work"
    tool = work / "src/minisweagent/models/utils/actions_toolcall.py"
    tool.parent.mkdir(parents=True)
    tool.write_text(f"BASH_TOOL = {BASH_TOOL!r}\n")
    for name, steps in [("inst_pub", 4), ("inst_a", 4), ("inst_b", 5), ("inst_short", 1)]:
        traj = work / "output" / "dev" / name / f"{name}.traj.json"
        traj.parent.mkdir(parents=True)
        traj.write_text(json.dumps(run(name, steps)))
    git("init", "-q", cwd=work)
    git("add", ".", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "runs", cwd=work)
    root = tmp_path / "mirrors"
    git(
        "clone",
        "-q",
        "--bare",
        str(work),
        str(root / "SWE-agent+mini-swe-agent" / "repo"),
        cwd=tmp_path,
    )
    return root, git("rev-parse", "HEAD", cwd=work)


@pytest.fixture
def converters_path() -> Path:
    """The public trajectories' ``convert_more.py``, named by ``$CONTEXTENGINE_BENCH_CONVERTERS``."""
    value = os.environ.get(CONVERTERS_VARIABLE, "")
    if not value or not Path(value).is_file():
        pytest.skip(
            f"set {CONVERTERS_VARIABLE} to the public trajectories' more/convert_more.py "
            "(not shipped with the repo) to test the held-out conversion"
        )
    return Path(value)


def test_runs_that_are_not_public_files_are_converted_and_load(
    mirrors: tuple[Path, str],
    converters_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, head = mirrors
    bench = heldout()
    cm = bench.converters(converters_path)
    monkeypatch.setattr(cm, "MIRROR_ROOT", str(root))
    monkeypatch.setattr(cm, "MSA_PR816", head)
    log: list[str] = []
    public = {f"{REPO}:output/dev/inst_pub/inst_pub.traj.json"}
    written = bench.build(
        cm, tmp_path / "out", per_source=5, seed=1, min_steps=2, public=public, log=log.append
    )
    assert sorted(p.name.rsplit("_", 1)[0] for p in written) == [
        "msa2_deepseek_inst_a",
        "msa2_deepseek_inst_b",
    ], "the public run and the short one are left out"
    for path in written:
        trajectory = load_trajectory(path)
        assert trajectory.model == "deepseek/deepseek-chat"
        assert trajectory.steps[0].tool_calls[0].name == "bash"
        assert json.loads(path.read_text())["source"].endswith(f"@{head}")
    assert "msa2_deepseek: 2 of 3 runs not among the public files" in log
    assert any(line.startswith("oh_claude35sonnet: skipped, no mirror of") for line in log)

    again = bench.build(
        cm, tmp_path / "again", per_source=1, seed=1, min_steps=2, public=public, log=log.append
    )
    same = bench.build(
        cm, tmp_path / "same", per_source=1, seed=1, min_steps=2, public=public, log=log.append
    )
    assert [p.name for p in again] == [p.name for p in same], "the seed decides the sample"


def test_a_missing_mirror_folder_is_one_line_and_a_failure(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "heldout.py"),
            str(tmp_path / "none"),
            str(tmp_path / "o"),
            "--converters",
            str(tmp_path / "convert_more.py"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == f"error: no mirror folder {tmp_path / 'none'}"
