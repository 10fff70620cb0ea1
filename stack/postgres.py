"""PostgreSQL with PostGIS: one cluster with the ``geoweb`` and ``airflow`` databases, in a folder of the clone's
own that the ``postgres`` user can reach (``layout.PG_HOME``, outside the clone)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import psycopg2

from stack.layout import (
    AIRFLOW_DB,
    GEOWEB_DB,
    GEOWEB_DB_FILE,
    PG_BIN,
    PG_DATA,
    PG_DATA_IN_CLONE,
    PG_HOME,
    PG_LOG,
    PG_PORT,
    REPO,
)

DATABASES = ((GEOWEB_DB, True), (AIRFLOW_DB, False))  # each DSN names database, owner and password; PostGIS
# The cluster trusts loopback connections, so its superuser needs no password (local tests and benchmarks).
SUPERUSER_DSN = f"host=127.0.0.1 port={PG_PORT} user=postgres"


class PostgresError(RuntimeError):
    """A PostgreSQL command failed; the message is one line with what it wrote to stderr."""


def _as_postgres(*command: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Run a command as the ``postgres`` system user: PostgreSQL refuses to run as root. It runs in / since
    the current folder may be out of that user's reach."""
    try:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *command], check=check, text=True, cwd="/", **kwargs
        )
    except subprocess.CalledProcessError as exc:
        said = " ".join((exc.stderr or exc.stdout or "").split()) or "no output"
        raise PostgresError(f"{Path(command[0]).name} exited with {exc.returncode}: {said}") from exc


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


def _prepare_home() -> None:
    """PG_HOME owned by postgres, with a note of the clone it serves; a cluster in the clone moves into it."""
    try:
        PG_HOME.parent.mkdir(parents=True, exist_ok=True)
        PG_HOME.mkdir(mode=0o700, exist_ok=True)
        shutil.chown(PG_HOME, "postgres", "postgres")
        (PG_HOME / "clone").write_text(f"{REPO}\n")
    except (OSError, LookupError) as exc:
        raise PostgresError(
            f"cannot prepare {PG_HOME} for the postgres user ({exc}): run the stack as root"
        ) from exc
    if (PG_DATA_IN_CLONE / "PG_VERSION").exists() and not PG_DATA.exists():
        moved = subprocess.run(["mv", str(PG_DATA_IN_CLONE), str(PG_DATA)], capture_output=True, text=True)
        if moved.returncode != 0:  # mv as root keeps the files' owner, postgres, across file systems
            raise PostgresError(
                f"cannot move {PG_DATA_IN_CLONE} to {PG_DATA}: {' '.join(moved.stderr.split())}"
            )
    if _as_postgres("test", "-w", str(PG_HOME), check=False).returncode != 0:
        raise PostgresError(f"the postgres user cannot write {PG_HOME}: let it through every folder above it")


def start() -> None:
    """Starts the cluster if needed; then, whether it was running or not, migrates the harvest database to this
    code's schema and writes its DSN where ``geoweb`` looks when GEOWEB_DB is not set."""
    if not running():
        _start_cluster()
    migrate()
    _write_dsn_file()


def _start_cluster() -> None:
    _prepare_home()
    if not (PG_DATA / "PG_VERSION").exists():
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(PG_DATA), "-U", "postgres", "--auth=trust",
                     "-E", "UTF8", "--locale=C.UTF-8", capture_output=True)  # fmt: skip
    options = (
        f"-p {PG_PORT} -c listen_addresses=127.0.0.1 -c max_connections=200"
        f" -c shared_buffers={SHARED_BUFFERS} -k /tmp"
    )
    _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(PG_DATA), "-l", str(PG_LOG), "-o", options,
                 "-w", "start", capture_output=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while not running():
        if time.monotonic() > deadline:
            raise PostgresError(f"PostgreSQL did not start; see {PG_LOG}")
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


GEOWEB = Path(sys.executable).parent / "geoweb"  # the command of this environment


def migrate() -> None:
    """``geoweb migrate`` on the stack's harvest database, the one place a database is migrated."""
    done = subprocess.run([str(GEOWEB), "migrate"], env=os.environ | {"GEOWEB_DB": GEOWEB_DB},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if done.returncode != 0:
        raise PostgresError(f"geoweb migrate exited with {done.returncode}: {' '.join(done.stderr.split())}")


def _write_dsn_file() -> None:
    """GEOWEB_DB, readable by its owner only (it holds the password)."""
    GEOWEB_DB_FILE.parent.mkdir(parents=True, exist_ok=True)
    GEOWEB_DB_FILE.unlink(missing_ok=True)
    descriptor = os.open(GEOWEB_DB_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as f:
        f.write(f"{GEOWEB_DB}\n")


def stop() -> None:
    GEOWEB_DB_FILE.unlink(missing_ok=True)
    for data in (PG_DATA, PG_DATA_IN_CLONE):  # a cluster started in the clone runs there until stopped
        if (data / "postmaster.pid").exists():
            _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop",
                         check=False, capture_output=True)  # fmt: skip


def status() -> str:
    return f"postgres 127.0.0.1:{PG_PORT} " + ("up" if running() else "down")
