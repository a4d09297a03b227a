"""The usage report (R11.1): tokens, cache hits, cost and savings of a recorded session.

Reads a session's ``usage.jsonl`` (one record per model call, written by the agent). Cost
is priced per call by the call's model in genai-prices (``--prices`` overrides); a call of a
model without a known price costs nothing in the sums and its model is listed in
``unpriced_models``. Savings compare with the same calls without a prompt cache (every input
token at the uncached price). Prefix-monitor breaks are listed with their causes.

Where the provider diagnosed its own cache (Anthropic's cache diagnostics, recorded as
``cache_diagnosis``), each main call's provider verdict is set against the monitor's, and
every call where they disagree is listed: one of them is wrong. The provider says the
prefix broke when the model, system or tools changed, or when the messages diverged more
than the previous main call left uncached (a divergence in its live observations and
task-status tail, which every step replaces, is no break); it says nothing conclusive while
its comparison is pending, unavailable or missing the previous message.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from contextengine.agent.usage_log import UsageRecord, read_usage
from contextengine.errors import ContextEngineError
from contextengine.prices import UNKNOWN_PRICE, Prices, model_prices, prices_for
from contextengine.session.entries import ToolResultEntry
from contextengine.session.layout import SessionLayout
from contextengine.session.listing import iter_entries
from contextengine.untrusted import JSONObject


@dataclass(frozen=True)
class UsageReport:
    """Totals over a session's model calls (keys of ``report --json``)."""

    session: str
    calls: int
    calls_by_purpose: dict[str, int]
    models: tuple[str, ...]
    prices: str
    input_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    output_tokens: int
    hit_rate: float
    cost_usd: float
    cost_without_cache_usd: float
    savings_usd: float
    savings_share: float
    cache_breaks: tuple[JSONObject, ...]
    unpriced_models: tuple[str, ...] = ()
    sub_agents: tuple[JSONObject, ...] = ()
    cache_diagnosed_calls: int = 0
    cache_disagreements: tuple[JSONObject, ...] = ()

    def as_dict(self) -> JSONObject:
        """JSON-ready totals."""
        out = asdict(self)
        out["models"] = list(self.models)
        out["cache_breaks"] = list(self.cache_breaks)
        out["cache_disagreements"] = list(self.cache_disagreements)
        out["unpriced_models"] = list(self.unpriced_models)
        out["sub_agents"] = list(self.sub_agents)
        return out


def load_usage(session_dir: Path) -> list[UsageRecord]:
    """The usage records of the session in ``session_dir``; one-line error if there are none."""
    path = SessionLayout(session_dir).usage_log
    if not session_dir.is_dir():
        raise ContextEngineError(f"{session_dir}: not a folder")
    if not path.is_file():
        raise ContextEngineError(f"{session_dir}: no usage.jsonl here (not a session folder?)")
    return list(read_usage(path))


def usage_report(
    session_dir: Path, records: list[UsageRecord], prices: str | None = None
) -> UsageReport:
    """Totals, cost and breaks of ``records``; ``prices`` names one family or model for every
    call, else each call is priced by its model (calls of unknown price add nothing)."""
    total_cost = no_cache_cost = 0.0
    priced_as: set[str] = set()
    unpriced: set[str] = set()
    for r in records:
        table = prices_for(prices) if prices else model_prices(r.model)
        if table is None:
            unpriced.add(r.model)
            continue
        priced_as.add(prices or r.model)
        total_cost += _with_cache(table, r)
        no_cache_cost += _no_cache(table, r)
    input_tokens = sum(r.input_tokens for r in records)
    cached = sum(r.cached_tokens for r in records)
    writes = sum(r.cache_write_tokens for r in records)
    return UsageReport(
        session=str(session_dir),
        calls=len(records),
        calls_by_purpose=dict(Counter(r.purpose for r in records)),
        models=tuple(sorted({r.model for r in records})),
        prices=", ".join([*sorted(priced_as), *([UNKNOWN_PRICE] if unpriced else [])]),
        input_tokens=input_tokens,
        cached_tokens=cached,
        cache_write_tokens=writes,
        uncached_tokens=max(0, input_tokens - cached - writes),
        output_tokens=sum(r.output_tokens for r in records),
        hit_rate=round(cached / input_tokens, 4) if input_tokens else 0.0,
        cost_usd=round(total_cost, 6),
        cost_without_cache_usd=round(no_cache_cost, 6),
        savings_usd=round(no_cache_cost - total_cost, 6),
        savings_share=round(1 - total_cost / no_cache_cost, 4) if no_cache_cost else 0.0,
        cache_breaks=tuple(
            {"call": r.step, "purpose": r.purpose, **_break_fields(found)}
            for r in records
            if isinstance(found := r.prefix.get("break"), dict)
        ),
        unpriced_models=tuple(sorted(unpriced)),
        sub_agents=tuple(sub_agent_usage(session_dir, prices)),
        cache_diagnosed_calls=sum(1 for r in records if r.cache_diagnosis is not None),
        cache_disagreements=tuple(cache_disagreements(records)),
    )


PROVIDER_BREAKS = frozenset({"model_changed", "system_changed", "tools_changed"})
"""Provider cache-miss reasons that always mean the cached prefix broke."""


def cache_disagreements(records: list[UsageRecord]) -> list[JSONObject]:
    """The main calls where the provider's cache diagnosis and the prefix monitor disagree
    on whether the prefix broke: ``call``, the provider's ``reason`` and
    ``missed_input_tokens``, the ``monitor``'s break cause (``stable`` for none)."""
    found: list[JSONObject] = []
    previous: UsageRecord | None = None
    for record in records:
        if record.purpose != "main":
            continue
        provider = _provider_break(record.cache_diagnosis, previous)
        previous = record
        brk = record.prefix.get("break")
        monitor = str(brk.get("cause")) if isinstance(brk, dict) else None
        if provider is None or provider == (monitor is not None):
            continue
        diagnosis = record.cache_diagnosis or {}
        found.append(
            {
                "call": record.step,
                "reason": diagnosis.get("reason"),
                "missed_input_tokens": diagnosis.get("missed_input_tokens", 0),
                "monitor": monitor or "stable",
            }
        )
    return found


def _provider_break(diagnosis: JSONObject | None, previous: UsageRecord | None) -> bool | None:
    """Whether the provider says the prefix broke; ``None`` when it says nothing conclusive."""
    if diagnosis is None:
        return None
    reason = diagnosis.get("reason")
    if reason == "none":
        return False
    if reason in PROVIDER_BREAKS:
        return True
    if reason != "messages_changed" or previous is None:
        return None
    uncached = previous.input_tokens - previous.cached_tokens - previous.cache_write_tokens
    missed = diagnosis.get("missed_input_tokens")
    return isinstance(missed, int) and missed > max(0, uncached)


def sub_agent_usage(session_dir: Path, prices: str | None = None) -> list[JSONObject]:
    """Each sub-agent the session delegated to (R16), in order: its session id and folder
    (a sibling of ``session_dir``), its model calls and their cost."""
    found: list[JSONObject] = []
    for entry in iter_entries(SessionLayout(session_dir).log):
        if not isinstance(entry, ToolResultEntry) or entry.child_session is None:
            continue
        folder = session_dir.parent / entry.child_session
        usage = SessionLayout(folder).usage_log
        records = list(read_usage(usage)) if usage.is_file() else []
        found.append(
            {
                "session": entry.child_session,
                "folder": str(folder),
                "status": entry.status,
                "calls": len(records),
                "cost_usd": usage_report(folder, records, prices).cost_usd,
            }
        )
    return found


def call_cost(record: UsageRecord) -> float | None:
    """The cost of one call in USD at its model's prices; None when they are unknown."""
    table = model_prices(record.model)
    return None if table is None else _with_cache(table, record)


def _with_cache(table: Prices, r: UsageRecord) -> float:
    uncached = max(0, r.input_tokens - r.cached_tokens - r.cache_write_tokens)
    return table.cost(uncached, r.cached_tokens, r.cache_write_tokens, r.output_tokens)


def _no_cache(table: Prices, r: UsageRecord) -> float:
    return table.cost(r.input_tokens, 0, 0, r.output_tokens)


def _break_fields(found: JSONObject) -> JSONObject:
    keys = ("cause", "position", "old_snippet", "new_snippet")
    return {k: found[k] for k in keys if k in found}


def call_events(record: UsageRecord) -> list[str]:
    """What to mark at a call: ``compaction`` / ``reboot`` side calls, ``break: <cause>``."""
    events = {"summary": ["compaction"], "reboot": ["reboot"]}.get(record.purpose, [])
    brk = record.prefix.get("break")
    if isinstance(brk, dict):
        events = [*events, f"break: {brk.get('cause')}"]
    return events


def plot_usage(records: list[UsageRecord], path: Path, title: str = "") -> None:
    """A PNG of input tokens per model call, split cached / cache write / uncached; cache
    breaks and compactions are marked and labelled; calls are numbered by integers."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError:
        raise ContextEngineError(
            "--plot needs matplotlib: pip install 'contextengine[measure]'"
        ) from None
    calls = list(range(1, len(records) + 1))
    cached = [r.cached_tokens for r in records]
    writes = [r.cache_write_tokens for r in records]
    uncached = [max(0, r.input_tokens - r.cached_tokens - r.cache_write_tokens) for r in records]
    fig, ax = plt.subplots(figsize=(max(6.0, min(24.0, len(records) * 0.12)), 4.0))
    ax.bar(calls, cached, width=1.0, label="cached", color="#4c956c")
    ax.bar(calls, writes, width=1.0, bottom=cached, label="cache write", color="#f2c14e")
    bottoms = [c + w for c, w in zip(cached, writes, strict=True)]
    ax.bar(calls, uncached, width=1.0, bottom=bottoms, label="uncached", color="#d1495b")
    top = max((r.input_tokens for r in records), default=0)
    row = 0
    for n, r in zip(calls, records, strict=True):
        for label in call_events(r):
            color = "#c92a2a" if label.startswith("break") else "#7048e8"
            ax.axvline(n, color=color, linestyle=":", linewidth=1.2)
            # neighbouring labels take turns at three heights so they do not overlap
            ax.annotate(
                label,
                (n, top * (1.02 + 0.07 * (row % 3))),
                fontsize=8,
                color=color,
                annotation_clip=False,
            )
            row += 1
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(top, 1) * 1.25)
    ax.set_xlabel("model call")
    ax.set_ylabel("input tokens")
    ax.set_title(title or "Input tokens per call")
    ax.legend(loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
