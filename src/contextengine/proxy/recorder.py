"""What the proxy keeps of each model call: the capture file and the live cache profile.

Recording runs on one worker thread, after the response has been passed on: the capture
line is written and the request profiled there, in arrival order, off the request's path.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contextengine.context.tokens import shared_counter
from contextengine.measure.capture import CapturedRequest
from contextengine.measure.profile import CacheProfiler
from contextengine.measure.segments import CaptureFormatError
from contextengine.types import Usage

RECENT_REQUESTS = 50


class Recorder:
    """Appends one capture line per model call and keeps the live profile of them all."""

    def __init__(self, log: Path | None) -> None:
        self.log = log
        self._profiler = CacheProfiler()
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proxy-recorder")
        self._worker.submit(shared_counter)  # load the tokenizer before the first call
        self.recorded = 0

    def submit(
        self, path: str, body: bytes, status: int, chunks: Sequence[bytes], sse: bool
    ) -> None:
        """Record a finished call later, on the worker thread."""
        self._worker.submit(self.record, path, body, status, b"".join(chunks), sse)

    def record(self, path: str, body: bytes, status: int, response: bytes, sse: bool) -> None:
        """Write the capture line of one call and profile its request."""
        request = _json(body)
        if request is None:
            return  # not a JSON body: nothing a prefix cache sees
        usage = sse_usage(response) if sse else json_usage(response)
        line = {
            "request": request,
            "path": path,
            "response_status": status,
            "usage": usage.token_counts() if usage else None,
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        with self._lock:
            if self.log is not None:
                with self.log.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
            self.recorded += 1
            # Another endpoint's JSON (embeddings...) is captured but not profiled.
            if isinstance(request, Mapping):
                with suppress(CaptureFormatError):
                    self._profiler.add(CapturedRequest(request, usage))

    def stats(self) -> dict[str, Any]:
        """The live page's data: the summary and the most recent requests."""
        with self._lock:
            recent = [r.as_dict() for r in self._profiler.requests[-RECENT_REQUESTS:]]
            return {"summary": self._profiler.summary(), "recent": recent, "log": str(self.log)}

    def drain(self) -> None:
        """Wait until every submitted call is recorded (tests and shutdown)."""
        self._worker.submit(lambda: None).result()

    def close(self) -> None:
        """Record what is pending, then stop the worker."""
        self._worker.shutdown(wait=True)


def json_usage(response: bytes) -> Usage | None:
    """Usage from a JSON response body (any of the three wire formats)."""
    value = _json(response)
    if not isinstance(value, Mapping):
        return None
    nested = value.get("response")  # a Responses API body may nest it
    usage = value.get("usage") or (nested.get("usage") if isinstance(nested, Mapping) else None)
    return Usage.from_wire(usage)


def sse_usage(stream: bytes) -> Usage | None:
    """Usage from a finished event stream: every ``usage`` seen, later values winning.

    Chat Completions sends it in the last chunk, Responses in ``response.completed``,
    Anthropic splits it between ``message_start`` and ``message_delta``.
    """
    merged: dict[str, Any] = {}
    for event in stream.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(
            line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
        )
        if not data or data == b"[DONE]" or b"usage" not in data:
            continue
        value = _json(data)
        if not isinstance(value, Mapping):
            continue
        for holder in (value, value.get("message"), value.get("response")):
            usage = holder.get("usage") if isinstance(holder, Mapping) else None
            if isinstance(usage, Mapping):
                merged.update({k: v for k, v in usage.items() if v is not None})
    return Usage.from_wire(merged) if merged else None


def _json(data: bytes) -> Any:
    """``data`` parsed as JSON, or None. The stdlib parser: the bytes are the user's own
    client's and server's, and this runs beside the event loop, so it must be quick."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None
