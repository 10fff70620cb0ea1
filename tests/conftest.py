"""Shared fixtures for tests that need the local stack (``python -m stack``).

``postgis_dsn`` yields the DSN of a fresh, migrated PostGIS database owned by ``geoweb`` (dropped at the end);
``postgis_database`` makes more, with PostGIS but no schema; ``redis_url`` yields the local Redis URL (its
database flushed at the end). Each starts its stack component if it is not running and stops it at the end only if it
started it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from urllib.parse import urlsplit

import psycopg2
import pytest
import redis

from geoweb.store import Store
from stack import postgres as stack_postgres
from stack import redis as stack_redis
from stack.layout import GEOWEB_DB, PG_PORT, REDIS_URL

# The stack's cluster trusts loopback connections, so its superuser needs no password (local tests only).
SUPERUSER_DSN = f"host=127.0.0.1 port={PG_PORT} user=postgres"


@contextmanager
def _superuser(dbname: str = "postgres") -> Iterator:
    """A cursor of the cluster's superuser, in autocommit (CREATE/DROP DATABASE refuse transactions)."""
    conn = psycopg2.connect(SUPERUSER_DSN, dbname=dbname)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


@contextmanager
def _postgis_database() -> Iterator[str]:
    """A new database owned by the geoweb user with PostGIS in it, dropped afterwards: its DSN."""
    name = f"geoweb_test_{secrets.token_hex(4)}"
    geoweb_db = urlsplit(GEOWEB_DB)
    with _superuser() as cur:
        cur.execute(f'CREATE DATABASE "{name}" OWNER "{geoweb_db.username}"')
    try:
        with _superuser(name) as cur:
            cur.execute("CREATE EXTENSION postgis")  # not a trusted extension: only a superuser may create it
        yield geoweb_db._replace(path=f"/{name}").geturl()
    finally:
        with _superuser() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
    with _postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
        yield dsn


@pytest.fixture(scope="session")
def postgis_database(postgres_server) -> Callable[[], AbstractContextManager[str]]:
    """``with postgis_database() as dsn``: a new database with PostGIS but no schema, dropped afterwards."""
    return _postgis_database


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
