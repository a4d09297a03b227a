"""A session's usage and its recorded requests: parts, cache, breaks, per-call timeline."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from contextengine.agent.usage_log import parse_usage
from contextengine.measure.inspector import CallView, first_difference, inspect_session, timeline
from contextengine.measure.report import usage_report
from contextengine.server.errors import ApiError
from contextengine.server.routes.deps import Store
from contextengine.server.routes.plain import PlainRoute
from contextengine.server.store import SessionStore
from contextengine.session.layout import SessionLayout

router = APIRouter(prefix="/api/sessions/{session_id}", route_class=PlainRoute)


@router.get("/usage")
def usage(session_id: str, store: Store) -> dict[str, Any]:
    """Token totals and cache hit rate."""
    directory = store.directory(session_id)
    lines = store.kept_in.usage(SessionLayout(directory))
    records = list(parse_usage(lines, f"{directory} usage"))
    return usage_report(directory, records).as_dict()


@router.get("/inspect")
def inspect_calls(session_id: str, store: Store) -> dict[str, Any]:
    """Every recorded request: parts, cache, breaks."""
    return {"calls": [c.as_dict() for c in _calls_of(store, session_id)]}


@router.get("/inspect/timeline")
def inspect_timeline(session_id: str, store: Store) -> dict[str, Any]:
    """Per-call tokens, cost and events; totals."""
    directory = store.directory(session_id)
    if not SessionLayout(directory).usage_log.is_file():
        return {"calls": [], "totals": usage_report(directory, []).as_dict()}
    return timeline(directory)


@router.get("/inspect/{call}")
def inspect_call(session_id: str, call: int, store: Store) -> dict[str, Any]:
    """Request ``call``'s text, parts and where it differs from the one before."""
    calls = _calls_of(store, session_id)
    if not 1 <= call <= len(calls):
        raise ApiError(404, f"session {session_id!r} has no call {call}")
    view = calls[call - 1]
    text = view.request.text()
    before = calls[call - 2].request.text() if call > 1 else None
    at = first_difference(before, text) if before is not None else None
    return {
        **view.as_dict(),
        "text": text,
        "diff": None
        if before is None
        else {"previous": call - 1, "position": at, "old": _around(before, at)},
    }


def _calls_of(store: SessionStore, session_id: str) -> list[CallView]:
    directory = store.directory(session_id)
    return inspect_session(directory) if SessionLayout(directory).requests.is_file() else []


def _around(text: str, at: int | None) -> str | None:
    """The previous request's text near the first difference (what was there before)."""
    return None if at is None else text[max(0, at - 40) : at + 120]
