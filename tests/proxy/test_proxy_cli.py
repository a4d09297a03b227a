"""``contextengine proxy`` as users run it: a process in front of a local upstream."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import openai

from proxy.upstream import REPLY, Upstream

CLI = [sys.executable, "-m", "contextengine.cli", "proxy"]


def test_the_command_serves_records_and_flushes_on_exit(tmp_path: Path) -> None:
    log = tmp_path / "capture.jsonl"
    with Upstream() as upstream:
        process = subprocess.Popen(
            [*CLI, "--upstream", upstream.url, "--port", "0", "--log", str(log)],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            banner = process.stderr.readline()
            url = re.search(r"proxy (http://127\.0\.0\.1:\d+)", banner)
            assert url, banner
            client = openai.OpenAI(api_key="k", base_url=url.group(1) + "/v1", max_retries=5)
            reply = client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
            )
            assert reply.choices[0].message.content == REPLY
        finally:
            process.terminate()
            process.wait(timeout=30)
    (line,) = log.read_text().splitlines()
    assert json.loads(line)["request"]["messages"] == [{"role": "user", "content": "hi"}]


def test_a_bad_upstream_is_one_line_exit_2() -> None:
    result = subprocess.run(
        [*CLI, "--upstream", "ftp://example"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "--upstream must be an http(s) URL" in result.stderr


def test_a_busy_port_is_one_line_exit_2() -> None:
    with Upstream() as upstream:
        port = upstream.url.rsplit(":", 1)[1]
        result = subprocess.run(
            [*CLI, "--upstream", upstream.url, "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert "cannot listen on 127.0.0.1" in result.stderr
    assert "Traceback" not in result.stderr
