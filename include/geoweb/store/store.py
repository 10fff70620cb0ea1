"""The harvest database: one connection, its schema, and a repository per group of tables.

Every write is an upsert on a unique key, so redoing a page, a level or a whole run never duplicates a row;
rows are written in key order, so that concurrent workers lock them in one order and cannot deadlock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import psycopg2

from geoweb.errors import StoreError
from geoweb.store.catalogue import Catalogue
from geoweb.store.concepts import load_concepts
from geoweb.store.frontier import Frontier
from geoweb.store.migrations import apply_migrations
from geoweb.store.pagestates import PageStatesTable
from geoweb.store.repository import transaction
from geoweb.store.resources import Resources
from geoweb.store.revisits import Revisits
from geoweb.store.runs import Runs


class Store:
    """One connection to the harvest database (a psycopg2 connection: one Store per thread), shared by its
    repositories: ``runs`` (runs, their levels, searches and seeds), ``frontier`` (each run's URLs and what
    the crawl found on them), ``resources`` (resources, datasets, a run's export), ``catalogue`` (outside
    sources, their records and scenes), ``revisits`` (the revisit schedule and history) and ``page_states``
    (what each crawl remembers of its URLs between runs). Usable as a context manager, which closes the
    connection."""

    def __init__(self, dsn: str):
        try:
            self.conn = psycopg2.connect(dsn, application_name="geoweb")
        except psycopg2.Error as exc:  # the message names host, port and user, never the password
            raise StoreError(f"cannot connect to the harvest database: {str(exc).strip()}") from None
        self.runs = Runs(self.conn)
        self.frontier = Frontier(self.conn)
        self.resources = Resources(self.conn)
        self.catalogue = Catalogue(self.conn)
        self.revisits = Revisits(self.conn)
        self.page_states = PageStatesTable(self.conn)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Store:
        """The store named by GEOWEB_DB (a libpq DSN or postgresql:// URI)."""
        return cls(cls.dsn_from_env(environ))

    @staticmethod
    def dsn_from_env(environ: Mapping[str, str] = os.environ) -> str:
        """The DSN of GEOWEB_DB; StoreError when it is not set."""
        dsn = environ.get("GEOWEB_DB", "").strip()
        if not dsn:
            raise StoreError(
                "GEOWEB_DB is not set: set it to the PostGIS database, postgresql://USER:PASSWORD@HOST:PORT/DB"
            )
        return dsn

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def transaction(self):
        """A cursor in one transaction (``repository.transaction``), for a query no repository has."""
        return transaction(self.conn)

    @contextmanager
    def unflushed_commits(self) -> Iterator[None]:
        """Transactions in the block commit without waiting for the disk (``synchronous_commit`` off): a
        crawl's batch of pages waits 0.1 ms for its commit, not an fsync of 4. For work that is redone when
        lost: a server crash may lose the last of them, whose pages then stay to be fetched. The first writing
        transaction after the block waits for them all, its commit coming after theirs in the WAL."""
        with self.transaction() as cur:
            cur.execute("SET synchronous_commit = off")
        try:
            yield
        finally:
            if not self.conn.closed:
                with self.transaction() as cur:
                    cur.execute("RESET synchronous_commit")

    def migrate(self) -> list[str]:
        """Apply pending migrations (see ``geoweb.store.migrations``) and load the ontology's concepts;
        returns the versions applied."""
        applied = apply_migrations(self.conn)
        load_concepts(self.conn)
        return applied


def migrate_database(dsn: str) -> list[str]:
    """Bring the harvest database at ``dsn`` to this code's schema (``Store.migrate``): the one migration of a
    deployment, run by ``geoweb migrate`` and by the first task of every DAG run. Returns the versions applied."""
    with Store(dsn) as store:
        return store.migrate()
