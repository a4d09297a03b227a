"""Held-out runs: a seeded sample of recorded runs that are not among the public files.

Every choice of the engine was looked at against the public trajectories, so a change that
helps only them is no progress. This script converts other runs from the same public
sources (OpenHands' SWE-bench run, mini-swe-agent's two runs, the two Claude Code fixture
folders: the same harnesses, models and kinds of task) with the converters of
``../shared/bench/trajectories/more/convert_more.py``, into a folder that the replay
benchmarks measure like any other:

    python benchmarks/heldout.py MIRROR_ROOT OUT --converters PUBLIC/more/convert_more.py
                                 [--per-source 12] [--seed 20261123]
    python benchmarks/replay_all.py --trajectories OUT

``--converters`` is ``convert_more.py`` in the ``more/`` folder of the public trajectories
(not shipped with the repo); the public runs left out of the sample are read from the folder
above it.

``MIRROR_ROOT`` holds the bare git mirrors that ``convert_more.py``'s docstring names
(``<owner>+<name>/repo``); a source whose mirror is missing is skipped. Runs are read at the
commits that file pins, drawn at random (``--seed``) and kept when they have at least
``--min-steps`` model turns.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Source:
    """One public source of recorded runs, by the names ``convert_more.py`` gives its mirror,
    pinned commit, converter and licence, and how to find its runs among the tree's files."""

    tag: str
    mirror: str
    commit: str
    kind: str
    license: str
    runs: Callable[[ModuleType, list[str]], list[str]]


def _mini_v1(cm: ModuleType, tree: list[str]) -> list[str]:
    base = "swebench_results/20251118_gemini-3-pro-74pct/trajs/"
    return [p for p in tree if p.startswith(base) and p.endswith(".traj.json")]


def _mini_v2(cm: ModuleType, tree: list[str]) -> list[str]:
    return [p for p in tree if p.startswith("output/") and p.endswith(".traj.json")]


def _openhands(cm: ModuleType, tree: list[str]) -> list[str]:
    base = f"{cm.OH_CLAUDE_DIR}/llm_completions/"
    return sorted({base + p[len(base) :].split("/")[0] for p in tree if p.startswith(base)})


def _claude_code(folder: str) -> Callable[[ModuleType, list[str]], list[str]]:
    def runs(cm: ModuleType, tree: list[str]) -> list[str]:
        # compaction subagents ("acompact") only summarize: they are no agent runs
        start = getattr(cm, folder) + "/"
        return [
            p for p in tree if p.startswith(start) and p.endswith(".jsonl") and "acompact" not in p
        ]

    return runs


SOURCES = (
    Source(
        "oh_claude35sonnet", "OH", "OH_PR5306", "openhands_completions", "LIC_OH_PR", _openhands
    ),
    Source("msa1_gemini3pro", "GRU", "GRU_HEAD", "mini_v1", "LIC_GRU", _mini_v1),
    Source("msa2_deepseek", "MSA", "MSA_PR816", "mini_v2", "LIC_MSA_PR", _mini_v2),
    Source(
        "claudecode_spotter",
        "SPOT",
        "SPOT_HEAD",
        "claude_code",
        "LIC_SPOT",
        _claude_code("SPOT_DIR"),
    ),
    Source("claudecode_ccl", "CCL", "CCL_HEAD", "claude_code", "LIC_CCL", _claude_code("CCL_DIR")),
)


def converters(path: Path) -> ModuleType:
    """The public trajectories' own converters (``convert_more.py``), loaded as a module."""
    if not path.is_file():
        sys.exit(f"error: no converters at {path}")
    spec = importlib.util.spec_from_file_location("convert_more", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_sources(directory: Path) -> set[str]:
    """``repo:path`` of every public trajectory (their ``source`` without the commit)."""
    out: set[str] = set()
    for file in directory.rglob("*.json"):
        source = json.loads(file.read_text(encoding="utf-8")).get("source", "")
        out.add(source.rsplit("@", 1)[0])
    return out


def tree(cm: ModuleType, mirror: str, commit: str) -> list[str]:
    """Every file path of ``mirror`` at ``commit``."""
    done = subprocess.run(
        ["git", "--git-dir", cm._git_dir(mirror), "ls-tree", "-r", "--name-only", commit],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "git failed")
    return done.stdout.splitlines()


def convert(cm: ModuleType, source: Source, path: str) -> dict[str, Any]:
    """One run in the trajectory format, as ``convert_more.py`` writes its files."""
    mirror, commit = getattr(cm, source.mirror), getattr(cm, source.commit)
    selection = {
        "out": "",
        "kind": source.kind,
        "mirror": mirror,
        "commit": commit,
        "path": path,
        "license": getattr(cm, source.license),
        "ref": commit,
        "instance": path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".traj.json"),
    }
    converted = cm.ADAPTERS[source.kind](selection)
    return {
        "source": f"{cm.repo_name(mirror)}:{path}@{commit}",
        "license": selection["license"],
        "model": converted["model"],
        "task": cm.truncate_task(converted["task"]),
        "system": converted["system"],
        "tools": converted["tools"],
        "steps": converted["steps"],
        "meta": dict(converted["meta"], task_chars=len(converted["task"])),
    }


def file_name(source: Source, path: str) -> str:
    """The output file of the run at ``path``: the source's tag, the run's own name and a
    digest of its path (two models' runs of one task share the name)."""
    stem = path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".jsonl").removesuffix(".traj.json")
    digest = hashlib.sha256(path.encode()).hexdigest()[:6]
    return f"{source.tag}_{_UNSAFE.sub('_', stem)}_{digest}.json"


def build(
    cm: ModuleType,
    out: Path,
    *,
    per_source: int,
    seed: int,
    min_steps: int,
    public: set[str],
    log: Callable[[str], None],
) -> list[Path]:
    """Convert up to ``per_source`` runs of each source into ``out``; the written files."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    rng = random.Random(seed)
    for source in SOURCES:
        mirror = getattr(cm, source.mirror)
        try:
            paths = source.runs(cm, tree(cm, mirror, getattr(cm, source.commit)))
        except RuntimeError as exc:
            log(f"{source.tag}: skipped, no mirror of {cm.repo_name(mirror)} ({exc})")
            continue
        fresh = [p for p in sorted(paths) if f"{cm.repo_name(mirror)}:{p}" not in public]
        kept = 0
        for path in rng.sample(fresh, len(fresh)):
            if kept == per_source:
                break
            try:
                doc = convert(cm, source, path)
            except Exception as exc:  # a run its converter cannot read is no held-out run
                reason = (str(exc).splitlines() or [""])[0][:160]
                log(f"{source.tag}: {path}: not converted ({type(exc).__name__}: {reason})")
                continue
            if len(doc["steps"]) < min_steps:
                continue
            target = out / file_name(source, path)
            target.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
            written.append(target)
            kept += 1
            log(f"{target.name}: {len(doc['steps'])} steps, {doc['model']}")
        log(f"{source.tag}: {kept} of {len(fresh)} runs not among the public files")
    return written


def main() -> None:
    """Parse the arguments, convert the sample, print where it is."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mirror_root", type=Path, help="folder of <owner>+<name>/repo mirrors")
    parser.add_argument("out", type=Path, help="folder for the converted runs")
    parser.add_argument("--per-source", type=int, default=12, help="runs per source (12)")
    parser.add_argument("--seed", type=int, default=20261123, help="draws the sample")
    parser.add_argument(
        "--min-steps", type=int, default=8, help="a run needs this many model turns (8)"
    )
    parser.add_argument(
        "--converters",
        type=Path,
        required=True,
        help="convert_more.py in the public trajectories' more/ folder",
    )
    args = parser.parse_args()
    if not args.mirror_root.is_dir():
        sys.exit(f"error: no mirror folder {args.mirror_root}")
    cm = converters(args.converters)
    cm.MIRROR_ROOT = str(args.mirror_root)
    written = build(
        cm,
        args.out,
        per_source=args.per_source,
        seed=args.seed,
        min_steps=args.min_steps,
        public=public_sources(args.converters.resolve().parent.parent),
        log=lambda line: print(line, file=sys.stderr),
    )
    if not written:
        sys.exit(f"error: no run converted from the mirrors in {args.mirror_root}")
    print(f"{len(written)} held-out runs in {args.out}")


if __name__ == "__main__":
    main()
