"""The front door: the API token, Host and Origin checks, and the body size limit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from contextengine import Config
from contextengine.context.request import Request
from contextengine.server.guard import TOKEN_COOKIE, host_name

from .live import LiveServer, post_turn, scripted_app


@pytest.fixture
def server(workspace: Path) -> Iterator[LiveServer]:
    with LiveServer(scripted_app(workspace)) as live:
        yield live


def port_of(server: LiveServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


API_CALLS = [
    ("GET", "/api/sessions"),
    ("POST", "/api/sessions"),
    ("GET", "/api/sessions/x"),
    ("GET", "/api/sessions/x/history"),
    ("POST", "/api/sessions/x/messages"),
    ("GET", "/api/sessions/x/events"),
    ("POST", "/api/sessions/x/cancel"),
    ("GET", "/api/sessions/x/usage"),
    ("GET", "/api/sessions/x/memory"),
    ("GET", "/api/sessions/x/artifacts/a.txt"),
    ("GET", "/api/nothing"),
]


@pytest.mark.parametrize(("method", "path"), API_CALLS)
def test_every_api_call_without_the_token_is_a_401(
    server: LiveServer, method: str, path: str
) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": server.token}):
        response = httpx.request(method, server.url + path, headers=headers, json={})
        assert response.status_code == 401, headers
        assert response.json()["error"].startswith("missing or wrong API token")
    with server.client() as client:
        assert client.get("/api/sessions").json()["sessions"] == []


def test_the_token_is_accepted_as_bearer_header_or_cookie(server: LiveServer) -> None:
    with server.client() as client:
        assert client.post("/api/sessions").status_code == 201
    cookie = {"Cookie": f"{TOKEN_COOKIE}={server.token}"}
    listing = httpx.get(f"{server.url}/api/sessions", headers=cookie)
    assert listing.status_code == 200
    assert len(listing.json()["sessions"]) == 1
    wrong = {"Cookie": f"{TOKEN_COOKIE}=nope"}
    assert httpx.get(f"{server.url}/api/sessions", headers=wrong).status_code == 401


def test_the_printed_url_moves_the_token_into_a_cookie(server: LiveServer) -> None:
    opened = httpx.get(f"{server.url}/?token={server.token}")
    assert opened.status_code == 303
    assert opened.headers["location"] == "/"
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={server.token};")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    with httpx.Client(base_url=server.url, follow_redirects=True) as browser_like:
        page = browser_like.get(f"/?token={server.token}")
        assert page.status_code == 200 and "<html" in page.text
        assert browser_like.get("/api/sessions").status_code == 200

    refused = httpx.get(f"{server.url}/?token=wrong")
    assert refused.status_code == 401
    assert "set-cookie" not in refused.headers


def test_the_page_and_its_scripts_need_no_token(server: LiveServer) -> None:
    for path in ("/", "/static/app.js", "/static/style.css"):
        assert httpx.get(server.url + path).status_code == 200


def test_a_generated_token_is_long_and_new_each_time(workspace: Path) -> None:
    first = scripted_app(workspace).state.token
    second = scripted_app(workspace).state.token
    assert first != second and len(first) >= 32
    configured = scripted_app(workspace, config=Config(server_token="fixed-token-1"))
    assert configured.state.token == "fixed-token-1"


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", "10.0.0.1"],
)
def test_a_foreign_host_header_is_a_403_everywhere(server: LiveServer, host: str) -> None:
    # DNS rebinding: a page on evil.example resolves its name to 127.0.0.1.
    headers = {**server.auth, "Host": host.format(port=port_of(server))}
    for path in ("/", "/static/app.js", "/api/sessions"):
        response = httpx.get(server.url + path, headers=headers)
        assert response.status_code == 403, path
        assert response.json()["error"].startswith(f"host {headers['Host']!r} is not allowed")


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST:{port}", "127.0.0.1:{port}", "[::1]:{port}"]
)
def test_local_host_names_are_allowed(server: LiveServer, host: str) -> None:
    headers = {**server.auth, "Host": host.format(port=port_of(server))}
    assert httpx.get(f"{server.url}/api/sessions", headers=headers).status_code == 200


def test_configured_host_names_are_allowed(workspace: Path) -> None:
    config = Config(server_allowed_hosts=("box.lan",))
    app = scripted_app(workspace, config=config)
    with LiveServer(app) as server:
        for host, status in (("box.lan:1", 200), ("other.lan", 403)):
            response = httpx.get(
                f"{server.url}/api/sessions", headers={**server.auth, "Host": host}
            )
            assert response.status_code == status, host


def test_allowed_hosts_come_from_the_environment_comma_separated() -> None:
    env = {"CONTEXTENGINE_SERVER_ALLOWED_HOSTS": "a.lan, b.lan,"}
    assert Config.load(env=env).server_allowed_hosts == ("a.lan", "b.lan")


def test_host_names_are_compared_without_port_and_brackets() -> None:
    assert host_name("Example.COM:8765") == "example.com"
    assert host_name("[::1]:80") == "::1"
    assert host_name("::1") == "::1"
    assert host_name("localhost") == "localhost"


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "file://", "https://localhost"]
)
def test_a_cross_site_origin_is_a_403(server: LiveServer, origin: str) -> None:
    with server.client() as client:
        sid = client.post("/api/sessions").json()["id"]
        headers = {"Origin": origin}
        for method, path in (
            ("POST", "/api/sessions"),
            ("POST", f"/api/sessions/{sid}/messages"),
            ("POST", f"/api/sessions/{sid}/cancel"),
            ("GET", f"/api/sessions/{sid}/events"),
        ):
            response = client.request(method, path, headers=headers, json={"message": "hi"})
            assert response.status_code == 403, (method, path)
            assert response.json()["error"] == (
                f"origin {origin!r} may not use this server (cross-site request)"
            )
        assert len(client.get("/api/sessions").json()["sessions"]) == 1
        assert client.get(f"/api/sessions/{sid}/history").json()["entries"] == []


def test_the_servers_own_origin_is_allowed(server: LiveServer) -> None:
    with server.client() as client:
        created = client.post("/api/sessions", headers={"Origin": server.url})
        assert created.status_code == 201


def counting_app(workspace: Path, config: Config) -> tuple[Any, list[Request]]:
    calls: list[Request] = []

    def model(request: Request) -> dict[str, Any]:
        calls.append(request)
        return {"content": "An answer that is long enough."}

    return scripted_app(workspace, model, config), calls


def test_a_body_over_the_limit_is_a_413_and_never_reaches_the_model(workspace: Path) -> None:
    app, calls = counting_app(workspace, Config())
    with LiveServer(app) as server, server.client() as client:
        sid = client.post("/api/sessions").json()["id"]
        huge = "x" * (20 * 1024 * 1024)
        response = client.post(f"/api/sessions/{sid}/messages", json={"message": huge})
        assert response.status_code == 413
        assert response.json() == {
            "error": "request body too large: the limit is 1048576 bytes (server_max_body_bytes)"
        }
        assert calls == []
        assert client.get(f"/api/sessions/{sid}").json()["busy"] is False
        assert client.get(f"/api/sessions/{sid}/history").json()["entries"] == []


def test_the_limit_holds_for_a_chunked_body_without_length(workspace: Path) -> None:
    app, calls = counting_app(workspace, Config(server_max_body_bytes=1000))
    with LiveServer(app) as server, server.client() as client:
        sid = client.post("/api/sessions").json()["id"]

        def chunks(total: int) -> Iterator[bytes]:
            yield b'{"message": "'
            for _ in range(total // 100):
                yield b"y" * 100
            yield b'"}'

        response = client.post(
            f"/api/sessions/{sid}/messages",
            content=chunks(5000),
            headers={"content-type": "application/json"},
        )
        assert response.status_code == 413
        assert calls == []
        # A body just within the limit goes through.
        events = post_turn(client, sid, "z" * 900)
        assert events[-1].event == "done"
        assert len(calls) == 1
