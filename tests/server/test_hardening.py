"""The server under hostile clients: slow headers, a connection storm, token guessing; and
what it gives away: the token in its access log, its schema, framing and referrers."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from contextengine.server.guard import FREE_FAILURES, MAX_HELD
from contextengine.server.protocol import HEADER_TIMEOUT_S

from .live import LiveServer, scripted_app

SRC = Path(__file__).resolve().parents[2] / "src"
FILES_LIMIT = 256  # the served process's descriptor limit in the storm test
SLOW_CLIENTS = 300  # more connections than that limit allows


@pytest.fixture
def server(workspace: Path) -> Iterator[LiveServer]:
    with LiveServer(scripted_app(workspace)) as live:
        yield live


def _serve(tmp_path: Path, files_limit: int | None = None) -> tuple[subprocess.Popen[bytes], Path]:
    """`contextengine serve` on a free port, its output in a log; the process and the log."""
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXTENGINE_")}
    env["PYTHONPATH"] = str(SRC)

    def limit_files() -> None:
        if files_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files_limit, files_limit))

    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "contextengine", "serve", "--port", "0", "--workspace",
             str(tmp_path), "-p", "ollama", "-m", "m"],
            stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=limit_files,
        )  # fmt: skip
    return process, log


def _url_and_token(process: subprocess.Popen[bytes], log: Path) -> tuple[str, str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"open (http://127\.0\.0\.1:(\d+))/\?token=(\S+)", log.read_text())
        if found:
            return found.group(1), found.group(3)
        assert process.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(log.read_text())


def _timed_get(url: str, headers: dict[str, str]) -> tuple[httpx.Response, float]:
    began = time.monotonic()
    response = httpx.get(url, headers=headers, timeout=30)
    return response, time.monotonic() - began


def test_wrong_tokens_are_held_while_the_right_one_passes_at_once(server: LiveServer) -> None:
    url = server.url + "/api/sessions"
    wrong = {"Authorization": "Bearer wrong"}
    for _ in range(FREE_FAILURES):
        assert _timed_get(url, wrong)[0].status_code == 401
    with ThreadPoolExecutor(1) as pool:
        guess = pool.submit(_timed_get, url, wrong)  # the first past the free ones: held 1 s
        time.sleep(0.3)
        right, took = _timed_get(url, server.auth)
        assert right.status_code == 200 and took < 0.5, took
        assert httpx.get(f"{server.url}/?token={server.token}").status_code == 303
        answer, waited = guess.result()
    assert answer.status_code == 429 and waited >= 0.9, waited
    # the right token did not give the guesser its free failures back: the next one waits 2 s
    answer, waited = _timed_get(url, wrong)
    assert answer.status_code == 429 and waited >= 1.9, waited


def test_an_address_with_held_answers_is_refused_unread(server: LiveServer) -> None:
    url = server.url + "/api/sessions"
    wrong = {"Authorization": "Bearer wrong"}
    for _ in range(FREE_FAILURES):
        assert _timed_get(url, wrong)[0].status_code == 401
    with ThreadPoolExecutor(MAX_HELD) as pool:
        guesses = [pool.submit(_timed_get, url, wrong) for _ in range(MAX_HELD)]
        time.sleep(0.5)
        # an immediate answer would tell a right guess from a wrong one: not even the right
        # token is looked at while the address has its held answers waiting
        refused = httpx.get(url, headers=server.auth)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert all(g.result()[0].status_code == 429 for g in guesses)
    assert httpx.get(url, headers=server.auth).status_code == 200


def test_pages_forbid_framing_referrers_and_foreign_scripts_and_no_schema_is_served(
    server: LiveServer,
) -> None:
    page = httpx.get(server.url + "/")
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    refused = httpx.get(server.url + "/api/sessions")
    assert refused.status_code == 401 and refused.headers["x-frame-options"] == "DENY"
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert httpx.get(server.url + path, headers=server.auth).status_code == 404, path


@pytest.mark.slow
def test_the_token_stays_out_of_the_access_log(tmp_path: Path) -> None:
    process, log = _serve(tmp_path)
    try:
        url, token = _url_and_token(process, log)
        assert httpx.get(f"{url}/?token={token}").status_code == 303
        assert httpx.get(f"{url}/?token=wrong-{token}").status_code == 401
        deadline = time.monotonic() + 10
        while log.read_text().count("GET /?token=") < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=10)
    text = log.read_text()
    served_at = text.index("?token=") + len("?token=") + len(token)  # the URL it printed
    assert "GET /?token=*** HTTP/1.1" in text
    assert token not in text[served_at:], text


@pytest.mark.slow
def test_slow_header_clients_beyond_the_descriptor_limit_do_not_starve_a_request(
    tmp_path: Path,
) -> None:
    process, log = _serve(tmp_path, FILES_LIMIT)
    slow: list[socket.socket] = []
    try:
        url, token = _url_and_token(process, log)
        port = int(url.rsplit(":", 1)[1])
        for _ in range(SLOW_CLIENTS):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"GET /api/server HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append(sock)
        started = time.monotonic()
        answered = None
        while answered is None and time.monotonic() - started < HEADER_TIMEOUT_S + 10:
            try:
                answered = httpx.get(
                    f"{url}/api/server", headers={"Authorization": f"Bearer {token}"}, timeout=5
                )
            except httpx.HTTPError:
                time.sleep(0.2)
        assert answered is not None and answered.status_code == 200, log.read_text()[-2000:]
        open_files = len(os.listdir(f"/proc/{process.pid}/fd"))
        assert open_files < FILES_LIMIT
        # every slow client is cut off once its headers are late
        time.sleep(max(0.0, HEADER_TIMEOUT_S + 2 - (time.monotonic() - started)))
        for sock in slow:
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1024) == b""
    finally:
        for sock in slow:
            sock.close()
        process.terminate()
        process.wait(timeout=10)
    text = log.read_text()
    assert "Traceback" not in text and len(text) < 20_000, text[-3000:]
