"""The stack's PostgreSQL from a clone in a folder of mode 700, as under /root: the ``postgres`` user cannot
enter the clone, so the cluster must live outside it (``layout.PG_HOME``) and still start there.

A copy of stack/ in a private folder stands for the clone (``layout`` finds the clone from its own path); its
cluster runs on a free port of its own beside any running stack, and is stopped and removed afterwards."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from geoweb import local_stack
from stack import postgres
from stack.layout import PG_BIN, PG_HOME, REPO

# Runs in the clone: ACTION (start, stop or status) its PostgreSQL on PORT, then prints the clone's PG_HOME.
IN_CLONE = """
import sys
from stack import layout
port, layout.PG_PORT = layout.PG_PORT, int(sys.argv[2])
layout.GEOWEB_DB = layout.GEOWEB_DB.replace(f":{port}/", f":{layout.PG_PORT}/")
from stack import postgres
getattr(postgres, sys.argv[1])()
print(layout.PG_HOME)
"""


def _postgres_user_exists() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (PG_BIN / "postgres").exists() or not _postgres_user_exists(),
    reason="needs root and PostgreSQL with its postgres user (scripts/setup.sh)",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def as_postgres_succeeds(*command: str) -> bool:
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], cwd="/").returncode == 0


def in_clone(clone: Path, action: str, port: int) -> Path:
    done = subprocess.run(
        [sys.executable, "-c", IN_CLONE, action, str(port)],
        cwd=clone, env=os.environ | {"PYTHONPATH": str(clone)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.split()[-1])


@pytest.fixture
def clone(tmp_path) -> Path:
    private = tmp_path / "home"
    private.mkdir(mode=0o700)
    shutil.copytree(REPO / "stack", private / "clone" / "stack", ignore=shutil.ignore_patterns("__pycache__"))
    return private / "clone"


def test_a_clone_in_a_private_folder_runs_its_own_cluster(clone):
    assert not as_postgres_succeeds("test", "-x", str(clone.parent))  # the folder keeps postgres out
    port = free_port()
    home = in_clone(clone, "status", port)
    try:
        in_clone(clone, "start", port)
        assert home.parent == PG_HOME.parent and home != PG_HOME  # one folder per clone, none in the clone
        assert (home / "clone").read_text() == f"{clone.resolve()}\n"
        assert as_postgres_succeeds(str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port))
        assert as_postgres_succeeds(
            str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-d", "geoweb", "-qAt", "-c",
            "SELECT postgis_version()",
        )  # fmt: skip
        assert not (clone / "var" / "stack" / "pg").exists()
        assert as_postgres_succeeds(
            str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-d", "geoweb", "-qAt", "-c",
            "SELECT 1 FROM schema_migrations LIMIT 1",
        )  # fmt: skip
        dsn_file = clone / local_stack.DSN_FILE  # where `geoweb` finds the database without GEOWEB_DB
        assert f":{port}/geoweb" in dsn_file.read_text() and dsn_file.stat().st_mode & 0o077 == 0
        in_clone(clone, "stop", port)
        assert not as_postgres_succeeds(str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port))
        assert not dsn_file.exists()
    finally:
        if (home / "pg" / "postmaster.pid").exists():
            as_postgres_succeeds(str(PG_BIN / "pg_ctl"), "-D", str(home / "pg"), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)


def test_a_failing_postgres_command_says_why_in_one_line():
    with pytest.raises(postgres.PostgresError) as raised:
        postgres._as_postgres("ls", "/nowhere", capture_output=True)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("ls exited with 2: ") and "/nowhere" in message
