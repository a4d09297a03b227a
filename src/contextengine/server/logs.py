"""What the server's logs leave out: the API token, and tracebacks of a full descriptor table.

uvicorn's access log writes each request's path with its query, and ``GET /?token=...`` is
how a browser first presents the token: the token is replaced by ``***``. When the process
runs out of file descriptors, asyncio logs every failed ``accept`` with a traceback (a flood
under a connection storm): it is one line, at most once per ``OUT_OF_FILES_EVERY_S``.
"""

from __future__ import annotations

import logging
import re
import time

TOKEN_IN_QUERY = re.compile(r"([?&]token=)[^&\s\"]*")
OUT_OF_FILES = "socket.accept() out of system resource"
OUT_OF_FILES_EVERY_S = 10.0


def redact_token(text: str) -> str:
    """``text`` with every ``token=`` query value replaced by ``***``."""
    return TOKEN_IN_QUERY.sub(r"\1***", text)


class RedactToken(logging.Filter):
    """Removes ``token=`` query values from a record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact, then keep the record."""
        if isinstance(record.args, tuple):
            record.args = tuple(redact_token(a) if isinstance(a, str) else a for a in record.args)
        if isinstance(record.msg, str):
            record.msg = redact_token(record.msg)
        return True


class OutOfFiles(logging.Filter):
    """Turns asyncio's failed-``accept`` tracebacks into one line every few seconds."""

    def __init__(self) -> None:
        super().__init__()
        self._last = float("-inf")

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep other records; this one without its traceback, and only now and then."""
        if not str(record.msg).startswith(OUT_OF_FILES):
            return True
        now = time.monotonic()
        if now - self._last < OUT_OF_FILES_EVERY_S:
            return False
        self._last = now
        record.msg = f"{OUT_OF_FILES}: too many open connections, refusing new ones for now"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        return True


def install_log_filters() -> None:
    """Add both filters to the loggers whose records they concern."""
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, RedactToken) for f in access.filters):
        access.addFilter(RedactToken())
    loop = logging.getLogger("asyncio")
    if not any(isinstance(f, OutOfFiles) for f in loop.filters):
        loop.addFilter(OutOfFiles())
