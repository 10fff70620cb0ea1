"""Versioned schema migrations: the ``NNNN_name.sql`` files of this package, applied in order, each in one transaction, under
an advisory lock so that workers starting together apply each one once."""

from __future__ import annotations

import logging
from importlib.resources import files
from importlib.resources.abc import Traversable

import psycopg2

from geoweb.errors import MigrationError

log = logging.getLogger("geoweb.store")

MIGRATIONS = files(__name__)
LOCK_KEY = 0x67656F776562  # "geoweb" in ASCII: the advisory lock that serialises schema changes


def pending(folder: Traversable, applied: set[str]) -> list[tuple[str, str]]:
    """(version, SQL) of the migrations not applied yet, in version order; the version is the file's stem."""
    scripts = sorted((p.name.removesuffix(".sql"), p) for p in folder.iterdir() if p.name.endswith(".sql"))
    return [
        (version, path.read_text(encoding="utf-8")) for version, path in scripts if version not in applied
    ]


def apply_migrations(conn, folder: Traversable = MIGRATIONS) -> list[str]:
    """Apply the pending migrations on a psycopg2 connection; returns the versions applied."""
    done: list[str] = []
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        conn.commit()
        try:
            with conn:
                cur.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                cur.execute("SELECT version FROM schema_migrations")
                applied = {row[0] for row in cur.fetchall()}
            for version, sql in pending(folder, applied):
                try:
                    with conn:
                        cur.execute(sql)
                        cur.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
                except psycopg2.Error as exc:
                    raise MigrationError(f"migration {version} failed and was rolled back: {exc}") from exc
                log.info("applied migration %s", version)
                done.append(version)
        finally:
            cur.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
            conn.commit()
    return done
