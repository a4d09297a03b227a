"""Bad requests get a JSON error with a clear message and a fitting status."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from contextengine import Config, MissingAPIKeyError
from contextengine.providers.base import Provider
from contextengine.server import create_app

from .live import LiveServer


@pytest.fixture
def sid(client: httpx.Client) -> str:
    return client.post("/api/sessions").json()["id"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"message": "   "}, "message: the message is empty"),
        ({}, "message: Field required"),
        ({"message": 3}, "message: Input should be a valid string"),
        ({"message": "hi", "extra": 1}, "extra: Extra inputs are not permitted"),
    ],
)
def test_a_bad_message_body_is_a_422_naming_the_field(
    client: httpx.Client, sid: str, body: dict, message: str
) -> None:
    response = client.post(f"/api/sessions/{sid}/messages", json=body)
    assert response.status_code == 422
    assert response.json() == {"error": message}
    assert client.get(f"/api/sessions/{sid}").json()["busy"] is False


def test_a_blank_answer_is_a_422_naming_the_field(client: httpx.Client, sid: str) -> None:
    response = client.post(f"/api/sessions/{sid}/answer", json={"answer": " \n "})
    assert response.status_code == 422
    assert response.json() == {"error": "answer: the answer is empty"}


def test_a_body_that_is_not_json_is_a_422(client: httpx.Client, sid: str) -> None:
    response = client.post(
        f"/api/sessions/{sid}/messages",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json() == {"error": "the request body is not valid JSON"}


def test_a_message_to_an_unknown_session_is_a_404(client: httpx.Client) -> None:
    response = client.post("/api/sessions/nope/messages", json={"message": "hi"})
    assert response.status_code == 404
    assert response.json()["error"].startswith("no session 'nope' in workspace ")


def test_unknown_routes_and_methods_are_json_errors(client: httpx.Client) -> None:
    missing = client.get("/api/nothing")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not Found"}
    wrong = client.delete("/api/sessions")
    assert wrong.status_code == 405
    assert wrong.json() == {"error": "Method Not Allowed"}


def test_the_web_ui_is_served_offline(client: httpx.Client) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    for asset in ("/static/app.js", "/static/style.css"):
        assert f'"{asset}"' in page.text
        assert client.get(asset).status_code == 200
    # No build step and no CDN: every script and stylesheet is served by us.
    assert "http://" not in page.text and "https://" not in page.text


def test_a_provider_that_cannot_be_built_is_a_json_error(tmp_path: Path) -> None:
    def no_key() -> Provider:
        raise MissingAPIKeyError("openai needs an API key: set OPENAI_API_KEY")

    with (
        LiveServer(create_app(tmp_path, no_key, Config())) as server,
        server.client() as client,
    ):
        response = client.post("/api/sessions")
        assert response.status_code == 500
        assert response.json() == {"error": "openai needs an API key: set OPENAI_API_KEY"}
