"""The load test's server process: scripted sessions whose model takes a little time.

Usage: ``python load_app.py WORKSPACE IDLE_SECONDS``; prints the URL with its token.
Each turn is ``STEPS`` small file writes and a final answer; every model call waits
half to one and a half ``MODEL_LATENCY_S``, as a remote model would (equal waits would
keep the sessions started together in step, every step of all 20 in the same instant).
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

from contextengine import Config, ScriptedProvider
from contextengine.context.request import Request
from contextengine.providers.base import Provider
from contextengine.server import create_app
from contextengine.server.run import run_server

STEPS = 3
MODEL_LATENCY_S = 1.0


def provider() -> Provider:
    """A session's model: STEPS tool calls, then an answer, turn after turn."""
    calls = 0
    latency = random.Random()

    def model(request: Request) -> dict[str, Any]:
        nonlocal calls
        step = calls % (STEPS + 1)
        calls += 1
        time.sleep(latency.uniform(0.5, 1.5) * MODEL_LATENCY_S)
        if step == STEPS:
            return {"content": f"All {STEPS} notes are written and checked."}
        note = {"path": f"note{step}.txt", "content": f"note {step}\n"}
        return {
            "content": f"Writing note {step}.",
            "tool_calls": [{"name": "file_write", "arguments": note}],
        }

    return ScriptedProvider(model)


if __name__ == "__main__":
    workspace = Path(sys.argv[1])
    config = Config(server_idle_s=float(sys.argv[2]))
    run_server(create_app(workspace, provider, config), "127.0.0.1", 0, workspace)
