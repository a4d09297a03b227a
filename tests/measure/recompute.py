"""An independent recomputation of `replay --json` from `--dump` files and the trajectory.

It follows docs/measurement.md and uses nothing from contextengine: its own JSON
canonicalization, its own tokenizer calls, its own prefix comparison and recall search.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import bpe_openai

ENC = bpe_openai.get_encoding("o200k_base")
SONNET = (3.0, 0.30, 3.75, 15.0)
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{5,}")


def tokens(text: str) -> int:
    return len(ENC.encode_ordinary(text))


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def model_text(message: dict[str, Any]) -> str:
    parts = [
        message.get("role") or "",
        message.get("tool_call_id") or "",
        message.get("content") or "",
    ]
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        parts += [call.get("id") or "", fn["name"], fn["arguments"]]
    return "\n".join(parts)


class Call:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.chunks = [canon(body["tools"])] + [canon(m) for m in body["messages"]]
        self.texts = [self.chunks[0]] + [model_text(m) for m in body["messages"]]
        self.counts = [tokens(t) for t in self.texts]
        self.persisted = 1 + body["persisted_messages"]

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def persisted_tokens(self) -> int:
        return sum(self.counts[: self.persisted])

    @property
    def persisted_chars(self) -> int:
        return sum(len(c) for c in self.chunks[: self.persisted])


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prefix_tokens(prev: Call, cur: Call) -> tuple[int, int]:
    """(tokens of the common prefix, chars of the common prefix of the whole texts)."""
    chars = common_prefix("".join(prev.chunks), "".join(cur.chunks))
    k, start = 0, 0
    while k < min(len(prev.chunks), len(cur.chunks)) and start + len(cur.chunks[k]) <= chars:
        if prev.chunks[k] != cur.chunks[k]:
            break
        start += len(cur.chunks[k])
        k += 1
    count = sum(cur.counts[:k])
    if k < min(len(prev.chunks), len(cur.chunks)):
        count += tokens(cur.texts[k][: common_prefix(prev.texts[k], cur.texts[k])])
    return min(count, cur.total), chars


def load_calls(directory: Path) -> list[tuple[str, Call]]:
    """Main and side calls in call order (a side call follows the step it was made after)."""
    mains = sorted(directory.glob("request-*.json"))
    sides = sorted(directory.glob("side-*.json"))
    side_bodies = [json.loads(p.read_text(encoding="utf-8")) for p in sides]
    order: list[tuple[str, Call]] = []
    for path in mains:
        body = json.loads(path.read_text(encoding="utf-8"))
        step = body["step"]
        order += [("side", Call(s)) for s in side_bodies if s["after_step"] == step - 1]
        order.append(("main", Call(body)))
    last = json.loads(mains[-1].read_text(encoding="utf-8"))["step"] if mains else -1
    order += [("side", Call(s)) for s in side_bodies if s["after_step"] >= last]
    return order


def references(trajectory: dict[str, Any]) -> list[set[str]]:
    given = (trajectory.get("system") or "") + "\n" + trajectory["task"]
    earlier = ""
    out = []
    for step in trajectory["steps"]:
        texts = [step.get("assistant") or ""]
        for call in step.get("tool_calls") or []:
            texts += list(strings(call.get("arguments") or {}))
        found = {i for t in texts for i in IDENT.findall(t)}
        out.append({i for i in found if i in earlier and i not in given})
        earlier += "\n" + (step.get("observation") or "")
    return out


def strings(value: Any):  # type: ignore[no-untyped-def]
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def content_tokens(trajectory: dict[str, Any]) -> int:
    tools = []
    for tool in trajectory.get("tools") or []:
        body = tool["function"] if tool.get("type") == "function" else tool
        params = body.get("parameters") or {"type": "object", "properties": {}}
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": body["name"],
                    "description": body.get("description", ""),
                    "parameters": params,
                },
            }
        )
    tools.sort(key=lambda t: t["function"]["name"])
    total = (
        tokens(trajectory.get("system") or "") + tokens(canon(tools)) + tokens(trajectory["task"])
    )
    for step in trajectory["steps"]:
        total += tokens(step.get("user") or "") + tokens(step.get("assistant") or "")
        total += tokens(step.get("observation") or "")
        for call in step.get("tool_calls") or []:
            args = call.get("arguments", {})
            total += tokens(call["name"]) + tokens(args if isinstance(args, str) else canon(args))
    return total


def recompute(directory: Path, trajectory: dict[str, Any]) -> dict[str, Any]:
    """The figures of `replay --json` (engine), from the dumps and the trajectory."""
    previous: Call | None = None
    side_writes: list[Call] = []  # side calls since the last main: what they wrote is cached
    sums = dict.fromkeys(("input", "cached", "write", "output", "prefix", "ideal", "main_input"), 0)
    cost = input_cost = 0.0
    breaks = 0
    recalls = []
    refs = references(trajectory)
    sides = []
    for kind, call in load_calls(directory):
        prefix = written = ideal = 0
        if previous is not None:
            prefix, chars = prefix_tokens(previous, call)
            written = previous.persisted_tokens
            ideal = max(prefix, min(written, call.total))
            if kind == "main" and chars < previous.persisted_chars:
                breaks += 1
        cached = min(prefix, written)
        for side in side_writes:
            cached = max(cached, min(prefix_tokens(side, call)[0], side.persisted_tokens))
        write = max(0, call.persisted_tokens - cached)
        output = sum(tokens(t) for t in call.body["output"])
        uncached = call.total - cached - write
        sums["input"] += call.total
        sums["cached"] += cached
        sums["write"] += write
        sums["output"] += output
        p_in, p_read, p_write, p_out = SONNET
        input_cost += (uncached * p_in + cached * p_read + write * p_write) / 1e6
        cost += output * p_out / 1e6 + (uncached * p_in + cached * p_read + write * p_write) / 1e6
        if kind == "main":
            sums["prefix"] += prefix
            sums["ideal"] += ideal
            sums["main_input"] += call.total
            text = "\n".join([*strings(call.body["messages"]), *strings(call.body["tools"])])
            step_refs = refs[call.body["step"]]
            if step_refs:
                recalls.append(sum(1 for r in step_refs if r in text) / len(step_refs))
            previous = call
            side_writes = []
        else:
            side_writes.append(call)
            sides.append({"purpose": call.body["purpose"], "cached_tokens": cached})
    content = content_tokens(trajectory)
    return {
        "steps": sum(1 for kind, _ in load_calls(directory) if kind == "main"),
        "input_tokens": sums["input"],
        "cached_tokens": sums["cached"],
        "cache_write_tokens": sums["write"],
        "uncached_tokens": sums["input"] - sums["cached"] - sums["write"],
        "output_tokens": sums["output"],
        "prefix_reuse": round(sums["prefix"] / sums["main_input"], 4),
        "ideal_prefix_reuse": round(sums["ideal"] / sums["main_input"], 4),
        "content_tokens": content,
        "cost_usd": round(cost, 5),
        "input_cost_usd": round(input_cost, 5),
        "floor_usd": round(content * SONNET[0] / 1e6, 5),
        "reference_recall": round(sum(recalls) / len(recalls), 4) if recalls else None,
        "cache_breaks": breaks,
        "side_calls": sides,
    }
