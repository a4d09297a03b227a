"""A test MCP server over streamable HTTP, shared by the MCP tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.mcp_servers import http_server


@pytest.fixture(scope="session")
def http_url() -> Iterator[str]:
    """The endpoint of the test server served over streamable HTTP on 127.0.0.1."""
    with http_server() as url:
        yield url
