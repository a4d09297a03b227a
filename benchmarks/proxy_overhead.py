"""Overhead of ``contextengine proxy`` per request: direct vs through the proxy, side by side.

A local upstream (a thread in this process) answers Chat Completions requests, as JSON or
as an event stream. ``contextengine proxy`` runs as its own process (as users run it) in
front of it, recording to a temporary capture. Requests alternate direct / via the proxy
on keep-alive connections, so machine noise hits both alike; the body is a ~40 KB
conversation. Printed: median latency each way, the median of the paired differences, and
the proxy process's CPU time per request (steady even when the machine is busy).
Target: < 5 ms median overhead.

    python benchmarks/proxy_overhead.py [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

USAGE = {
    "prompt_tokens": 10000,
    "completion_tokens": 5,
    "prompt_tokens_details": {"cached_tokens": 9000},
}
REPLY = json.dumps(
    {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": USAGE,
    }
).encode()
STREAM = (
    b"".join(
        b"data: " + json.dumps(chunk).encode() + b"\n\n"
        for chunk in (
            {"choices": [{"index": 0, "delta": {"content": "o"}}]},
            {"choices": [{"index": 0, "delta": {"content": "k"}}]},
            {"choices": [], "usage": USAGE},
        )
    )
    + b"data: [DONE]\n\n"
)


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        stream = b'"stream":true' in body
        payload = STREAM if stream else REPLY
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def body(stream: bool) -> bytes:
    """A ~40 KB conversation, like a mid-session agent request."""
    messages = [{"role": "system", "content": "You are a coding agent. " * 40}]
    for i in range(40):
        messages.append({"role": "user", "content": f"step {i}: " + "output line\n" * 80})
    request: dict[str, Any] = {"model": "gpt-4o", "messages": messages, "stream": stream}
    return json.dumps(request, separators=(",", ":")).encode()


def start_proxy(upstream: str, log: Path) -> tuple[subprocess.Popen[str], str]:
    """``contextengine proxy`` on a free port; returns the process and its URL."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "contextengine.cli",
            "proxy",
            "--upstream",
            upstream,
            "--port",
            "0",
            "--log",
            str(log),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"proxy (http://\S+)", line)
    if not found:
        process.kill()
        raise RuntimeError(f"the proxy did not start: {line}")
    url = found.group(1)
    for _ in range(200):  # the socket listens before uvicorn's app is up
        try:
            httpx.get(url + "/_contextengine/stats", timeout=1)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the proxy did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="requests each way and mode")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "capture.jsonl"
        process, proxy = start_proxy(upstream, log)
        try:
            warm_up(proxy)
            cpu_before = cpu_seconds(process.pid)
            results = {
                mode: measure(upstream, proxy, mode == "stream", args.requests)
                for mode in ("json", "stream")
            }
            cpu = cpu_seconds(process.pid) - cpu_before
        finally:
            process.terminate()
            process.wait(timeout=30)
        recorded = len(log.read_text().splitlines())  # the proxy records all before it exits
    server.shutdown()
    for mode, (direct, via) in results.items():
        paired = [v - d for d, v in zip(direct, via)]
        print(
            f"{mode:6}: direct {statistics.median(direct):6.2f} ms, via proxy "
            f"{statistics.median(via):6.2f} ms, median overhead {statistics.median(paired):5.2f} ms "
            f"(p90 {statistics.quantiles(paired, n=10)[-1]:5.2f} ms)"
        )
    calls = 2 * (args.requests + 2)
    print(f"proxy CPU per request (recording included): {1000 * cpu / calls:.2f} ms")
    print(f"capture lines: {recorded} of {calls + 10} proxied model calls (10 warm-up)")


def warm_up(proxy: str, calls: int = 10) -> None:
    """Send ``calls`` requests and wait until the proxy has profiled them (tokenizer loaded)."""
    with httpx.Client(timeout=30) as client:
        for _ in range(calls):
            client.post(proxy + "/v1/chat/completions", content=body(stream=False))
        while client.get(proxy + "/_contextengine/stats").json()["summary"]["requests"] < calls:
            time.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(upstream: str, proxy: str, stream: bool, n: int) -> tuple[list[float], list[float]]:
    """Latencies in ms (whole reply read) direct and via the proxy, alternating."""
    payload = body(stream)
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    direct: list[float] = []
    via: list[float] = []
    with httpx.Client(timeout=30, headers=headers) as client:
        for i in range(n + 2):  # 2 rounds open the connections
            for base, into in ((upstream, direct), (proxy, via)):
                start = time.perf_counter()
                reply = client.post(base + "/v1/chat/completions", content=payload)
                reply.read()
                elapsed = (time.perf_counter() - start) * 1000
                assert reply.status_code == 200, reply.text
                if i >= 2:
                    into.append(elapsed)
    return direct, via


if __name__ == "__main__":
    main()
