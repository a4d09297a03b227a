"""Shared test helpers."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from support.postgres import Postgres, start_postgres
from support.redis import Redis, start_redis

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL server for the whole run; it failing to start fails the tests."""
    server = start_postgres(Path(tempfile.mkdtemp(prefix="contextengine-pg-")))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis() -> Iterator[Redis]:
    """A throwaway Redis server (the workers' broker) for the whole run; it must start."""
    server = start_redis(Path(tempfile.mkdtemp(prefix="contextengine-redis-")))
    try:
        yield server
    finally:
        server.stop()
