"""A failed HTTP model call as one ``ProviderError`` subclass, for every adapter.

The class follows the status (``errors`` draws the tree); ``retryable`` follows the status
too (408, 409, 429 and 5xx) unless the server says otherwise in ``x-should-retry``, as
OpenAI's and Anthropic's APIs do; ``retry_after_s`` is the server's ``retry-after-ms`` or
``retry-after``. The SDKs' own errors map here too, so the adapters share one mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from time import time
from types import ModuleType

from contextengine.errors import (
    AuthError,
    BadRequestError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitError,
    ServerError,
)
from contextengine.providers.wire import one_line

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""4xx statuses worth another attempt (besides every 5xx): timeout, lock conflict, rate limit."""


def status_error(
    where: str, status: int, message: str, headers: Mapping[str, str] | None = None
) -> ProviderError:
    """The error for an HTTP ``status`` answered to a call to ``where``."""
    headers = {k.lower(): v for k, v in (headers or {}).items()}
    return error_class(status)(
        f"{where}: HTTP {status}: {one_line(message)}",
        status=status,
        retryable=_retryable(status, headers.get("x-should-retry")),
        retry_after_s=retry_after(headers),
    )


def error_class(status: int) -> type[ProviderError]:
    """The ``ProviderError`` subclass for an HTTP error ``status``."""
    if status == 429:
        return RateLimitError
    if status in (401, 403):
        return AuthError
    if status == 408:
        return ProviderTimeoutError
    if 400 <= status < 500:
        return BadRequestError
    if status >= 500:
        return ServerError
    return ProviderError


def sdk_error(exc: Exception, where: str, sdk: ModuleType) -> ProviderError:
    """The error for an exception of the ``openai`` or ``anthropic`` SDK (``sdk``)."""
    if isinstance(exc, sdk.APIStatusError):
        return status_error(where, exc.status_code, exc.message, exc.response.headers)
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeoutError(f"{where}: request timed out")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderConnectionError(
            f"{where}: cannot connect to {_url_of(exc)}: {one_line(exc)}"
        )
    return ProviderError(f"{where}: {one_line(exc)}")


def _url_of(exc: Exception) -> str:
    """The URL a failed SDK call tried (the SDKs keep the ``httpx`` request)."""
    request = getattr(exc, "request", None)
    return str(getattr(request, "url", "")) or "the server"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``retry-after``), if it says."""
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        if "retry-after" in headers:
            value = headers["retry-after"]
            try:
                return max(0.0, float(value))
            except ValueError:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time())
    except (ValueError, TypeError):
        return None
    return None


def _retryable(status: int, should_retry: str | None) -> bool:
    if should_retry in ("true", "false"):
        return should_retry == "true"
    return status in RETRYABLE_STATUSES or status >= 500
