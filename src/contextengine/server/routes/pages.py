"""The web UI's page and the server's status."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse, Response

from contextengine.server.errors import ApiError
from contextengine.server.guard import NO_TOKEN, TOKEN_COOKIE
from contextengine.server.routes.deps import Guard, Store
from contextengine.server.routes.plain import PlainRoute

STATIC_DIR = Path(__file__).parents[1] / "static"

router = APIRouter(route_class=PlainRoute)


@router.get("/", include_in_schema=False)
def index(guard: Guard, token: str | None = None) -> Response:
    """The web UI; ``?token=`` moves the token into a cookie first."""
    if token is None:
        return FileResponse(STATIC_DIR / "index.html")
    if not guard.token_matches(token):
        raise ApiError(401, NO_TOKEN)
    # The token moves into a cookie (EventSource cannot send headers) and out of the
    # address bar and the history.
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return response


@router.get("/api/server")
def server_status(store: Store) -> dict[str, Any]:
    """Loaded agents, open channels, running turns."""
    return asdict(store.status())
