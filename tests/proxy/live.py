"""The proxy app served by uvicorn in a thread on a free localhost port."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import uvicorn

from contextengine.proxy import MAX_BODY_BYTES
from contextengine.proxy.app import create_proxy_app
from contextengine.proxy.command import bind
from contextengine.proxy.recorder import Recorder

START_TIMEOUT_S = 10


class LiveProxy:
    """``create_proxy_app(upstream, log)`` running until the block ends."""

    def __init__(
        self, upstream: str, log: Path | None, max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        self.app = create_proxy_app(upstream, log, max_body_bytes=max_body_bytes)
        self.sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(self.app, log_level="warning", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def token(self) -> str:
        """The live page's token."""
        return str(self.app.state.token)

    @property
    def recorder(self) -> Recorder:
        """What the proxy recorded."""
        return self.app.state.recorder

    def __enter__(self) -> LiveProxy:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
