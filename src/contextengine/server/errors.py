"""Every failure the API reports is JSON ``{"error": "<one line>"}`` with a fitting status."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from contextengine.errors import ContextEngineError, StoreError

logger = logging.getLogger(__name__)


class ApiError(ContextEngineError):
    """A request the API refuses: an HTTP status and a one-line message for the client.

    A ``ContextEngineError`` like every refusal; its own handler (the most specific one)
    answers with its ``status`` instead of the engine errors' 500.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_response(status: int, message: str) -> JSONResponse:
    """The JSON body every error has."""
    return JSONResponse({"error": message}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    """Map refusals, bad input, engine errors and bugs to JSON errors (never a traceback)."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message)

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid_input(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, describe_validation_error(exc))

    @app.exception_handler(StoreError)
    async def store_away(_: Request, exc: StoreError) -> JSONResponse:
        # the database is away (restarting): the same request may succeed shortly
        return error_response(503, str(exc))

    @app.exception_handler(ContextEngineError)
    async def engine_error(_: Request, exc: ContextEngineError) -> JSONResponse:
        return error_response(500, str(exc))

    @app.exception_handler(Exception)
    async def bug(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error in the contextengine server")
        return error_response(500, f"internal server error ({type(exc).__name__}: {exc})")


def describe_validation_error(exc: RequestValidationError) -> str:
    """One line naming the first problem with the request."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":
        return "the request body is not valid JSON"
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    where = ".".join(loc) or "request body"
    message = str(first.get("msg", "invalid value"))
    return f"{where}: {message.removeprefix('Value error, ')}"
