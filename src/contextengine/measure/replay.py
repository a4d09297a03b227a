"""Replay (R11.2): a recorded run through the real agent, priced against two baselines.

The engine run uses the chosen config; ``full_history`` is the same run with every
component off (a plain append-only chat, nothing compressed); ``sliding_window`` keeps
system + task + the last 8 messages of that chat; each production policy of
``measure.policies`` is that chat as the policy would send it (``policy_replay``). All are
charged by one cache model (``accounting``) and checked for reference recall (``recall``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal, TypedDict

from contextengine.agent.events import PruneEvent
from contextengine.agent.loop import Agent
from contextengine.agent.parts import AgentRecipe
from contextengine.canonical import canonical_json
from contextengine.errors import ContextEngineError
from contextengine.measure.accounting import CacheAccountant
from contextengine.measure.playback import (
    RecordedTools,
    ReplayCall,
    ReplayProvider,
    ReplayScript,
    output_text,
)
from contextengine.measure.policies import POLICIES
from contextengine.measure.policy_replay import policy_calls
from contextengine.measure.recall import mean_recall, request_text, step_recall, step_references
from contextengine.measure.sliding_window import sliding_window
from contextengine.measure.tokens import TokenCounter
from contextengine.measure.trajectory import RecordedUsage, Trajectory
from contextengine.prices import (
    RECORDED,
    priced_model,
    prices_fell_back,
    prices_for,
    replay_prices,
)
from contextengine.session.layout import new_session_id
from contextengine.untrusted import JSONObject

StepCallback = Callable[[str, int], None]


class ReplayError(ContextEngineError):
    """The engine did not play a recording through (it ended a round early)."""


class BreakRow(TypedDict):
    """A cache break of a replayed main request: its step, cause and where it happened."""

    step: int | None
    cause: str
    position: int
    old: str
    new: str


class SideCallRow(TypedDict):
    """A replayed side call (a summary, a reboot) and how much of it was cached."""

    purpose: str
    after_step: int | None
    input_tokens: int
    cached_tokens: int
    cached_share: float


class PruneRow(TypedDict):
    """A pruning: when, how many results, what it saved and when it pays back."""

    step: int
    results: int
    saved_tokens: int
    payback_steps: float | None
    remaining_steps: int


@dataclass(frozen=True)
class StrategyResult:
    """The figures of one strategy over one recording (keys of ``replay --json``)."""

    steps: int
    prefix_reuse: float
    ideal_prefix_reuse: float
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int
    content_tokens: int
    cost_usd: float
    input_cost_usd: float
    floor_usd: float
    reference_recall: float | None
    cache_breaks: tuple[BreakRow, ...]
    side_calls: tuple[SideCallRow, ...]
    prunes: tuple[PruneRow, ...] = ()

    def rounded(self) -> StrategyResult:
        """These figures with costs rounded to 1/1000 cent, as reported."""
        return replace(
            self,
            cost_usd=round(self.cost_usd, 5),
            input_cost_usd=round(self.input_cost_usd, 5),
            floor_usd=round(self.floor_usd, 5),
        )

    def as_dict(self) -> JSONObject:
        """JSON-ready figures (costs rounded to 1/1000 cent)."""
        out = asdict(self.rounded())
        for rows in ("cache_breaks", "side_calls", "prunes"):
            out[rows] = list(out[rows])
        return out


@dataclass(frozen=True)
class ReplayResult:
    """The engine's figures and the baselines', for one recording and one engine recipe."""

    trajectory: str
    model: str
    recipe: AgentRecipe
    prices: str
    engine: StrategyResult
    baselines: dict[str, StrategyResult]
    prices_fallback: bool = False  # the recorded model has no known price
    recorded: JSONObject | None = None  # what the agent's own log says it used (``recorded``)

    def as_dict(self) -> JSONObject:
        """The ``replay --json`` object: the engine's keys at the top level."""
        return {
            "trajectory": self.trajectory,
            "model": self.model,
            "prices": self.prices,
            "prices_fallback": self.prices_fallback,
            "history_mode": self.recipe.history_mode,
            "context_window": self.recipe.context_window,
            "flags": dict(self.recipe.flags),
            **self.engine.as_dict(),
            "baselines": {name: r.as_dict() for name, r in self.baselines.items()},
            "recorded": self.recorded,
        }


def replay(
    trajectory: Trajectory,
    recipe: AgentRecipe | None = None,
    *,
    name: str = "",
    prices: str = RECORDED,
    counter: TokenCounter | None = None,
    dump: Path | None = None,
    on_step: StepCallback | None = None,
) -> ReplayResult:
    """Replay ``trajectory`` with the engine as ``recipe`` makes it (default: all defaults)
    and with the baselines; ``dump`` writes the engine's requests (``request-%04d.json``)
    and side calls (``side-%04d.json``)."""
    recipe = recipe if recipe is not None else AgentRecipe()
    replayer = Replayer(trajectory, prices=prices, counter=counter, window=recipe.context_window)
    engine = replayer.engine(recipe, dump=dump, on_step=_tagged(on_step, "engine"))
    return ReplayResult(
        trajectory=name,
        model=trajectory.model,
        recipe=recipe,
        prices=replayer.prices,
        engine=engine,
        baselines=replayer.baselines(on_step=_tagged(on_step, "full_history")),
        prices_fallback=prices_fell_back(prices, trajectory.model),
        recorded=recorded(trajectory.recorded_usage, replayer.prices),
    )


def recorded(usage: RecordedUsage | None, priced_as: str) -> JSONObject | None:
    """What the recorded agent was billed for, as its session log says, priced as the
    replay prices its strategies (``None`` when the log says nothing)."""
    if usage is None:
        return None
    prices = prices_for(priced_as)
    parts = (usage.uncached_tokens, usage.cached_tokens, usage.cache_write_tokens)
    return {
        "requests": usage.requests,
        "input_tokens": usage.input_tokens,
        "cached_tokens": usage.cached_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "uncached_tokens": usage.uncached_tokens,
        "output_tokens": usage.output_tokens,
        "input_cost_usd": round(prices.cost(*parts, 0), 5),
        "cost_usd": round(prices.cost(*parts, usage.output_tokens), 5),
    }


class Replayer:
    """One recording, replayed under several recipes; the baselines are computed once."""

    def __init__(
        self,
        trajectory: Trajectory,
        *,
        prices: str = RECORDED,
        counter: TokenCounter | None = None,
        window: int | None = None,
    ) -> None:
        self.trajectory = trajectory
        # the context window the policies' triggers see (the default config's unless given)
        self.window = window if window is not None else AgentRecipe().context_window
        self.counter = counter or TokenCounter()
        self.prices = replay_prices(prices, trajectory.model)  # "recorded" resolved
        self._figures = _Figures(trajectory, self.counter, self.prices)
        self._baselines: dict[str, StrategyResult] | None = None

    def engine(
        self,
        recipe: AgentRecipe,
        *,
        dump: Path | None = None,
        on_step: Callable[[int], None] | None = None,
    ) -> StrategyResult:
        """The engine's figures as ``recipe`` makes it (``dump``: write its requests there).
        Pruning weighs the cache prices of the model this replay charges (not always the
        recorded one: ``--prices claude-sonnet``) where the config sets none."""
        prunes: list[PruneEvent] = []
        calls = replay_engine(
            self.trajectory,
            recipe,
            self.counter,
            on_step=on_step,
            on_prune=prunes.append,
            priced_as=priced_model(self.prices),
        )
        if dump is not None:
            write_dump(self.trajectory, calls, dump)
        return self._figures.of(calls, prunes)

    def baselines(
        self, *, on_step: Callable[[int], None] | None = None
    ) -> dict[str, StrategyResult]:
        """``full_history``, ``sliding_window`` and every policy of ``POLICIES``
        (computed on first use)."""
        if self._baselines is None:
            plain = replay_engine(
                self.trajectory, AgentRecipe.plain_chat(), self.counter, on_step=on_step
            )
            accountant = CacheAccountant(self.counter)
            window = [
                ReplayCall(
                    r, c.reply, accountant.charge(r, c.cost.output_tokens), c.step, c.after_step
                )
                for c in plain
                if c.step is not None
                for r in [sliding_window(c.request)]
            ]
            self._baselines = {
                "full_history": self._figures.of(plain),
                "sliding_window": self._figures.of(window),
            }
            for policy in POLICIES:
                calls = policy_calls(policy, plain, CacheAccountant(self.counter), self.window)
                self._baselines[policy.name] = self._figures.of(calls)
        return self._baselines


def replay_engine(
    trajectory: Trajectory,
    recipe: AgentRecipe,
    counter: TokenCounter,
    *,
    on_step: Callable[[int], None] | None = None,
    on_prune: Callable[[PruneEvent], None] | None = None,
    priced_as: str | None = None,
) -> list[ReplayCall]:
    """Play ``trajectory`` through a real ``Agent`` as ``recipe`` makes it; every charged
    call (``on_prune`` sees each pruning, its ``step`` the recorded step it came before;
    ``priced_as``: the model whose cache prices the provider reports, else the recorded one)."""
    script = ReplayScript(trajectory)
    provider = ReplayProvider(
        script,
        CacheAccountant(counter),
        model=trajectory.model or "replay",
        on_step=on_step,
        priced_as=priced_as,
    )
    protocol: Literal["native", "text"] = "native" if trajectory.native_calls else "text"
    # The session goes where a live session of the default layout sits, under an id of a
    # live id's length: its artifact paths, which refs and stubs name on every later
    # request, are as long as a live session's.
    sid = trajectory.digest[: len(new_session_id())]
    with tempfile.TemporaryDirectory(prefix="contextengine-replay-") as tmp:
        workspace = Path(tmp) / "workspace"
        with closing(recipe.scratch_session(workspace, sid, protocol)) as session:
            parts = recipe.parts(
                provider,
                workspace,
                session=session,
                tools=RecordedTools(trajectory, script),
                # every recorded step is one model call; leave room for retries and reboots
                min_steps=2 * len(trajectory.steps) + 10,
            )
            # The recorded run's own system prompt and tools are L1, verbatim: the agent's
            # default prompt (and the text protocol's instructions) were not part of it.
            builder = recipe.builder(
                trajectory.system,
                trajectory.tool_specs if protocol == "native" else (),
                parts.workspace,
            )
            _play(Agent.from_parts(replace(parts, builder=builder)), script, on_prune)
    return provider.calls


def _play(
    agent: Agent, script: ReplayScript, on_prune: Callable[[PruneEvent], None] | None
) -> None:
    """Run each recorded round as a turn of ``agent``; ``ReplayError`` for a round the
    engine ended before its last recorded step."""
    for number, round_ in enumerate(script.rounds):
        script.begin(round_)
        status = ""
        for event in agent.stream(round_.user):
            status = getattr(getattr(event, "result", None), "status", status)
            if isinstance(event, PruneEvent) and on_prune is not None:
                on_prune(replace(event, step=script.position))
        if script.position < round_.end:
            raise ReplayError(
                f"the engine ended round {number + 1} at step {script.position} of "
                f"{round_.end} (status {status!r})"
            )


class _Figures:
    """Turns charged calls into a strategy's figures."""

    def __init__(self, trajectory: Trajectory, counter: TokenCounter, prices: str) -> None:
        self.trajectory = trajectory
        self.prices = prices_for(prices)
        self.references = step_references(trajectory)
        self.content_tokens = content_tokens(trajectory, counter)

    def of(self, calls: Sequence[ReplayCall], prunes: Sequence[PruneEvent] = ()) -> StrategyResult:
        """The figures of ``calls`` (main and side calls) and the ``prunes`` made."""
        main = [c for c in calls if c.step is not None]
        main_input = sum(c.cost.input_tokens for c in main)
        recalls = [
            step_recall(self.references[c.step], request_text(c.request.messages, c.request.tools))
            for c in main
            if c.step is not None
        ]
        return StrategyResult(
            steps=len(main),
            prefix_reuse=_share(sum(c.cost.prefix_tokens for c in main), main_input),
            ideal_prefix_reuse=_share(sum(c.cost.ideal_tokens for c in main), main_input),
            input_tokens=sum(c.cost.input_tokens for c in calls),
            cached_tokens=sum(c.cost.cached_tokens for c in calls),
            cache_write_tokens=sum(c.cost.cache_write_tokens for c in calls),
            uncached_tokens=sum(c.cost.uncached_tokens for c in calls),
            output_tokens=sum(c.cost.output_tokens for c in calls),
            content_tokens=self.content_tokens,
            cost_usd=self._cost(calls, output=True),
            input_cost_usd=self._cost(calls, output=False),
            floor_usd=self.prices.cost(self.content_tokens, 0, 0, 0),
            reference_recall=_round(mean_recall(recalls)),
            cache_breaks=_cache_breaks(main),
            side_calls=_side_calls(calls),
            prunes=_prunes(prunes, len(main)),
        )

    def _cost(self, calls: Sequence[ReplayCall], *, output: bool) -> float:
        """What ``calls`` cost, their output tokens included or not."""
        return sum(
            self.prices.cost(
                c.cost.uncached_tokens,
                c.cost.cached_tokens,
                c.cost.cache_write_tokens,
                c.cost.output_tokens if output else 0,
            )
            for c in calls
        )


def _cache_breaks(main: Sequence[ReplayCall]) -> tuple[BreakRow, ...]:
    """Where each main call's cached prefix broke, and why."""
    return tuple(
        {
            "step": c.step,
            "cause": brk.cause,
            "position": brk.position,
            "old": brk.old_snippet,
            "new": brk.new_snippet,
        }
        for c in main
        if (brk := c.cost.cache_break) is not None
    )


def _side_calls(calls: Sequence[ReplayCall]) -> tuple[SideCallRow, ...]:
    """The side calls (summaries, reboots): after which step, their tokens and cache share."""
    return tuple(
        {
            "purpose": c.cost.purpose,
            "after_step": c.after_step,
            "input_tokens": c.cost.input_tokens,
            "cached_tokens": c.cost.cached_tokens,
            "cached_share": _share(c.cost.cached_tokens, c.cost.input_tokens),
        }
        for c in calls
        if c.step is None
    )


def _prunes(prunes: Sequence[PruneEvent], steps: int) -> tuple[PruneRow, ...]:
    """Each pruning made before one of the ``steps`` recorded steps."""
    return tuple(
        {
            "step": p.step,
            "results": p.results,
            "saved_tokens": p.saved_tokens,
            "payback_steps": p.payback_steps,
            "remaining_steps": steps - p.step,
        }
        for p in prunes
        # a prune made for a request the recording never sent was charged nothing
        if p.step < steps
    )


def content_tokens(trajectory: Trajectory, counter: TokenCounter) -> int:
    """The recording's own content tokenized once: system, tools, task, user messages,
    assistant turns (text and calls) and full observations."""
    tools = canonical_json([spec.to_openai() for spec in trajectory.tool_specs])
    texts = [trajectory.system, tools, trajectory.task]
    for step in trajectory.steps:
        texts += [step.user or "", *output_text(step), step.observation]
    return sum(counter.count(t) for t in texts)


def write_dump(trajectory: Trajectory, calls: Sequence[ReplayCall], directory: Path) -> None:
    """Write each main request as ``request-%04d.json`` (numbered by recorded step) and each
    side call as ``side-%04d.json``: messages, tools, the persisted message count and the
    texts charged as output, enough to recompute every figure."""
    directory.mkdir(parents=True, exist_ok=True)
    side = 0
    for call in calls:
        body: dict[str, object] = {
            "purpose": call.request.purpose,
            "messages": call.request.messages,
            "tools": call.request.tools,
            "persisted_messages": call.request.segments.persisted,
        }
        if call.step is not None:
            name = f"request-{call.step:04d}.json"
            body["step"] = call.step
            body["output"] = output_text(trajectory.steps[call.step])
        else:
            name = f"side-{side:04d}.json"
            side += 1
            body["after_step"] = call.after_step
            body["output"] = [call.reply.content]
        (directory / name).write_text(
            json.dumps(body, ensure_ascii=False, indent=1), encoding="utf-8"
        )


def _tagged(callback: StepCallback | None, tag: str) -> Callable[[int], None] | None:
    if callback is None:
        return None
    return lambda step: callback(tag, step)


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
