"""PostgreSQL with PostGIS: one cluster under var/stack/pg with the ``geoweb`` and ``airflow`` databases."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import psycopg2

from stack.layout import AIRFLOW_DB, GEOWEB_DB, LOGS, PG_BIN, PG_DATA, PG_PORT

DATABASES = ((GEOWEB_DB, True), (AIRFLOW_DB, False))  # each DSN names database, owner and password; PostGIS
# The cluster trusts loopback connections, so its superuser needs no password (local tests and benchmarks).
SUPERUSER_DSN = f"host=127.0.0.1 port={PG_PORT} user=postgres"


def _as_postgres(*command: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Run a command as the ``postgres`` system user: PostgreSQL refuses to run as root."""
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], check=check, text=True, **kwargs)


def _psql(sql: str, database: str = "postgres") -> str:
    done = _as_postgres(
        str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(PG_PORT), "-d", database, "-v", "ON_ERROR_STOP=1",
        "-qAt", "-c", sql, capture_output=True,
    )  # fmt: skip
    return done.stdout.strip()


@contextmanager
def superuser(dbname: str = "postgres") -> Iterator:
    """A cursor of the cluster's superuser, in autocommit (CREATE/DROP DATABASE refuse transactions)."""
    conn = psycopg2.connect(SUPERUSER_DSN, dbname=dbname)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            yield cur
    finally:
        conn.close()


def create_postgis_database(name: str) -> str:
    """A new database ``name`` owned by the geoweb user, with PostGIS in it (no schema): its DSN."""
    geoweb_db = urlsplit(GEOWEB_DB)
    with superuser() as cur:
        cur.execute(f'CREATE DATABASE "{name}" OWNER "{geoweb_db.username}"')
    with superuser(name) as cur:
        cur.execute("CREATE EXTENSION postgis")  # not a trusted extension: only a superuser may create it
    return geoweb_db._replace(path=f"/{name}").geturl()


def drop_database(name: str) -> None:
    with superuser() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scratch_database(prefix: str = "geoweb_test") -> Iterator[str]:
    """A new PostGIS database of a random name (``create_postgis_database``), dropped afterwards: its DSN."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    try:
        yield create_postgis_database(name)
    finally:
        drop_database(name)


# PostgreSQL's own cache. A text search reads the document of every match, and at the default 128 MB most
# came from the system's cache, which the kernel reclaims: with 1 GB, GeoHub's typical searches on 100,000
# resources took 79-85 instead of 130 ms at the 95th percentile (bench/README.md).
SHARED_BUFFERS = "1GB"


def running() -> bool:
    ready = _as_postgres(str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(PG_PORT), check=False)
    return ready.returncode == 0


def start() -> None:
    if running():
        return
    PG_DATA.parent.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    shutil.chown(LOGS, "postgres")
    if not (PG_DATA / "PG_VERSION").exists():
        PG_DATA.mkdir(parents=True, exist_ok=True)
        shutil.chown(PG_DATA, "postgres")
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(PG_DATA), "-U", "postgres", "--auth=trust",
                     "-E", "UTF8", "--locale=C.UTF-8", capture_output=True)  # fmt: skip
    options = (
        f"-p {PG_PORT} -c listen_addresses=127.0.0.1 -c max_connections=200"
        f" -c shared_buffers={SHARED_BUFFERS} -k /tmp"
    )
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(PG_DATA), "-l", str(LOGS / "postgres.log"), "-o", options,
                 "-w", "start", capture_output=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while not running():
        if time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL did not start; see {LOGS / 'postgres.log'}")
        time.sleep(0.2)
    _create_databases()


def _create_databases() -> None:
    for dsn, postgis in DATABASES:
        parts = urlsplit(dsn)
        name, owner = parts.path.lstrip("/"), parts.username
        exists = _psql(f"SELECT 1 FROM pg_roles WHERE rolname = '{owner}'")
        _psql(f"{'ALTER' if exists else 'CREATE'} ROLE {owner} LOGIN PASSWORD '{parts.password}'")
        if not _psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}'"):
            _psql(f"CREATE DATABASE {name} OWNER {owner}")
        if postgis:
            _psql("CREATE EXTENSION IF NOT EXISTS postgis", database=name)


def stop() -> None:
    if (PG_DATA / "postmaster.pid").exists():
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(PG_DATA), "-m", "fast", "-w", "stop",
                     check=False, capture_output=True)  # fmt: skip


def status() -> str:
    return f"postgres 127.0.0.1:{PG_PORT} " + ("up" if running() else "down")
