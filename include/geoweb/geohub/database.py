"""Pooled, read-only connections to the harvest database for searches, opened on first use."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg2
from psycopg2.pool import ThreadedConnectionPool

from geoweb.errors import StoreError

log = logging.getLogger("geoweb.geohub")

MAX_CONNECTIONS = 4  # per process, opened on first use and kept: the request threads share them
WAIT_SECONDS = 10.0  # for a free connection, before the search is refused
STATEMENT_TIMEOUT_MS = 5000  # a search that takes longer is cancelled rather than holding a connection
# Read-only sessions: a search can never write, whatever its SQL. No JIT: PostGIS functions cost so much in
# the planner's eyes that it compiles searches of a few milliseconds for hundreds of milliseconds. Room for
# the matches a search holds while it counts them (tens of thousands of narrow rows spilled to disk at the
# default 4 MB), and no parallel workers: starting them cost more than they saved in each search measured
# (bench/README.md), and the API's requests already run side by side.
SESSION_OPTIONS = (
    f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c default_transaction_read_only=on -c jit=off"
    " -c work_mem=32MB -c max_parallel_workers_per_gather=0"
)


class SearchUnavailable(StoreError):
    """Raised when the harvest database cannot be reached or fails a search; the message has no secret."""

    reason = "search_unavailable"
    user_msg = "The harvest database is not available"


class SearchDatabase:
    """Connections for searches. ``dsn`` is called once, on first use, so that the database is named at
    request time (an Airflow Connection in the API server), never at import."""

    def __init__(
        self,
        dsn: Callable[[], str],
        max_connections: int = MAX_CONNECTIONS,
        wait_seconds: float = WAIT_SECONDS,
    ):
        self._dsn = dsn
        self._max = max_connections
        self._wait = wait_seconds
        self._pool: ThreadedConnectionPool | None = None
        self._lock = threading.Lock()
        self._free = threading.BoundedSemaphore(max_connections)

    def _connections(self) -> ThreadedConnectionPool:
        with self._lock:
            if self._pool is None:
                try:
                    # as many kept as allowed: psycopg2 closes a returned connection beyond minconn
                    self._pool = ThreadedConnectionPool(
                        self._max, self._max, self._dsn(), application_name="geohub", options=SESSION_OPTIONS
                    )
                except SearchUnavailable:
                    raise
                except StoreError as exc:  # no database is named
                    raise SearchUnavailable(str(exc)) from None
                except psycopg2.Error as exc:  # names host, port and user, never the password
                    raise SearchUnavailable(f"cannot open the search pool: {str(exc).strip()}") from None
            return self._pool

    @contextmanager
    def connection(self) -> Iterator:
        """A connection in autocommit (each search is one statement); a broken one is discarded, and the
        error becomes SearchUnavailable."""
        pool = self._connections()
        if not self._free.acquire(timeout=self._wait):
            raise SearchUnavailable(f"all {self._max} search connections stayed busy for {self._wait:g} s")
        try:
            try:
                conn = pool.getconn()
            except psycopg2.Error as exc:
                raise SearchUnavailable(
                    f"cannot connect to the harvest database: {str(exc).strip()}"
                ) from None
            try:
                conn.autocommit = True
                yield conn
            except psycopg2.Error as exc:
                log.error("search failed: %s", str(exc).strip())
                raise SearchUnavailable(f"search failed: {str(exc).strip()}") from None
            finally:
                pool.putconn(conn, close=conn.closed != 0)  # a lost connection is not given out again
        finally:
            self._free.release()

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.closeall()
                self._pool = None
