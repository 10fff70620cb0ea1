"""Shared fixtures for tests that need the local stack (``python -m stack``).

``postgis_dsn`` yields the DSN of a fresh, migrated PostGIS database owned by ``geoweb`` (dropped at the end);
``postgis_database`` makes more, with PostGIS but no schema; ``redis_url`` yields the local Redis URL (its
database flushed at the end). Each starts its stack component if it is not running and stops it at the end only if it
started it. The fresh-deployment tests run first of all, while the stack is as new as a deployment's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
import redis

from geoweb.store import Store
from stack import postgres as stack_postgres
from stack import redis as stack_redis
from stack.layout import REDIS_URL

FIRST = "tests/e2e/test_a_fresh_deployment.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fresh-deployment module first: every other stack test unpauses DAGs and fills the database."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] != FIRST)  # a stable sort keeps the rest in order


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[None]:
    started = not stack_postgres.running()
    if started:
        stack_postgres.start()
    yield
    if started:
        stack_postgres.stop()


@pytest.fixture(scope="session")
def postgis_dsn(postgres_server) -> Iterator[str]:
    with stack_postgres.scratch_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
        yield dsn


@pytest.fixture(scope="session")
def postgis_database(postgres_server) -> Callable[[], AbstractContextManager[str]]:
    """``with postgis_database() as dsn``: a new database with PostGIS but no schema, dropped afterwards."""
    return stack_postgres.scratch_database


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    started = not stack_redis.running()
    if started:
        stack_redis.start()
    yield REDIS_URL
    client = redis.Redis.from_url(REDIS_URL)
    client.flushdb()
    client.close()
    if started:
        stack_redis.stop()
