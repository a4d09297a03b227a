"""The HTTP server: a JSON API, SSE event streams of agent turns, and the web UI (R12.1)."""

from contextengine.server.app import create_app

__all__ = ["create_app"]
