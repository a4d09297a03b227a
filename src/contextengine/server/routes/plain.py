"""The API's route class: a handler's return annotation documents it, it is not re-validated."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.routing import APIRoute


class PlainRoute(APIRoute):
    """A route that sends what its handler returns without a response model.

    FastAPI makes a response model of a handler's return annotation (a plain dict
    here) and validates a plain function's return value against it in its thread pool:
    a second thread hop per request, which under load costs each cheap endpoint as much
    as the handler's own hop, and checks nothing the handler's types do not.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["response_model"] = None
        super().__init__(path, endpoint, **kwargs)
