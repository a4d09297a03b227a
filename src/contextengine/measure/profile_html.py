"""The ``profile --html`` report: one self-contained page, an inline SVG chart, no CDN."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from contextengine.measure.profile import BreakFigures, ProfileSummary, RequestFigures
from contextengine.prices import UNKNOWN_PRICE, usd

CHART_WIDTH = 880
CHART_HEIGHT = 240
MARGIN = 40

_STYLE = """
body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:60em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}pre{margin:0;white-space:pre-wrap;
font-size:12px}.num{text-align:right}.legend span{display:inline-block;width:12px;height:12px;
margin:0 4px 0 12px}
"""


def profile_html(requests: Sequence[RequestFigures], summary: ProfileSummary, title: str) -> str:
    """The report page for ``profile --json``'s ``requests`` and ``summary``."""
    rows = "".join(_break_row(r, brk) for r in requests if (brk := r["break"]))
    facts = "".join(
        f"<tr><th>{escape(name)}</th><td class=num>{escape(str(value))}</td></tr>"
        for name, value in _facts(summary)
    )
    breaks = (
        "<table><tr><th>request</th><th>cause</th><th>message</th><th>tokens re-read</th>"
        f"<th>cost</th><th>diff</th><th>fix</th></tr>{rows}</table>"
        if rows
        else "<p>No cache breaks: every request kept its conversation's prefix.</p>"
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Cache profile: {escape(title)}</h1><table>{facts}</table>"
        "<h2>Reusable prefix per request</h2>"
        '<p class=legend><span style="background:#ddd"></span>total tokens'
        '<span style="background:#2a7"></span>reusable prefix'
        '<span style="background:#d33"></span>break</p>'
        f"{_chart(requests)}<h2>Breaks</h2>{breaks}</body></html>\n"
    )


def _facts(summary: ProfileSummary) -> list[tuple[str, object]]:
    facts: list[tuple[str, object]] = [
        ("requests", summary["requests"]),
        ("conversations", summary["conversations"]),
        ("reusable prefix (hit rate)", f"{summary['hit_rate']:.1%}"),
        ("breaks", summary["breaks"]),
        ("tokens re-read after breaks", f"{summary['lost_tokens']:,}"),
        ("cost of the breaks", f"${summary['break_cost_usd']:.4f}"),
    ]
    if summary["measured_hit_rate"] is not None:
        facts.append(("measured cache hit rate (usage)", f"{summary['measured_hit_rate']:.1%}"))
        facts.append(("measured cost", f"${summary['measured_cost_usd']:.4f}"))
    if summary["unpriced_models"]:
        facts.append((UNKNOWN_PRICE, ", ".join(summary["unpriced_models"])))
    return facts


def _break_row(request: RequestFigures, brk: BreakFigures) -> str:
    index = "-" if brk["message_index"] is None else brk["message_index"]
    return (
        f"<tr><td class=num>{request['index']}</td><td><b>{escape(brk['cause'])}</b><br>"
        f"{escape(brk['description'])}</td><td class=num>{index}</td>"
        f"<td class=num>{brk['lost_tokens']:,}</td><td class=num>{usd(brk['cost_usd'])}</td>"
        f"<td><pre>{escape(brk['snippet'])}</pre></td><td>{escape(brk['fix'])}</td></tr>"
    )


def _chart(requests: Sequence[RequestFigures]) -> str:
    """Bars per request: total tokens in grey, the reusable prefix in green over it."""
    if not requests:
        return "<p>No requests.</p>"
    top = max(r["total_tokens"] for r in requests) or 1
    plot_w, plot_h = CHART_WIDTH - 2 * MARGIN, CHART_HEIGHT - 2 * MARGIN
    step = plot_w / len(requests)
    bar = max(1.0, step * 0.8)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_WIDTH}" height="{CHART_HEIGHT}" '
        f'viewBox="0 0 {CHART_WIDTH} {CHART_HEIGHT}" role="img">',
        f'<text x="{MARGIN}" y="{MARGIN - 10}" font-size="11">{top:,} tokens</text>',
        f'<line x1="{MARGIN}" y1="{MARGIN + plot_h}" x2="{MARGIN + plot_w}" '
        f'y2="{MARGIN + plot_h}" stroke="#888"/>',
    ]
    for i, r in enumerate(requests):
        x = MARGIN + i * step
        total_h = plot_h * r["total_tokens"] / top
        reuse_h = plot_h * r["reusable_tokens"] / top
        base = MARGIN + plot_h
        tip = f"request {r['index']}: {r['reusable_tokens']:,} of {r['total_tokens']:,} reusable"
        parts.append(
            f'<g><title>{escape(tip)}</title><rect x="{x:.1f}" y="{base - total_h:.1f}" '
            f'width="{bar:.1f}" height="{total_h:.1f}" fill="#ddd"/>'
            f'<rect x="{x:.1f}" y="{base - reuse_h:.1f}" width="{bar:.1f}" '
            f'height="{reuse_h:.1f}" fill="#2a7"/></g>'
        )
        if r["break"]:
            parts.append(
                f'<circle cx="{x + bar / 2:.1f}" cy="{base + 10}" r="4" fill="#d33">'
                f"<title>{escape(r['break']['cause'])}</title></circle>"
            )
    parts.append(
        f'<text x="{MARGIN}" y="{CHART_HEIGHT - 8}" font-size="11">requests in capture order '
        f"(0-{len(requests) - 1})</text></svg>"
    )
    return "".join(parts)
