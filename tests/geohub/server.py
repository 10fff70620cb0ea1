"""An Airflow API server that serves this repository's plugins (GeoHub) and searches a given harvest database
through the Connection geoweb_db: for the GeoHub tests and the search benchmark.

It runs with the stack's settings and metadata database (``python -m stack``), but its own port,
AIRFLOW_HOME and admin password, so that it always serves the plugin as it is now and leaves the stack's
own Airflow alone.
"""

from __future__ import annotations

import json
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from stack import airflow as stack_airflow
from stack import supervisor
from stack.supervisor import Service, StartError

START_TIMEOUT = 240.0  # the API server imports all of Airflow: 20 s on a quiet machine, minutes on a busy one


@dataclass(frozen=True)
class GeoHubServer:
    base_url: str  # the API server's root; GeoHub is at /geohub
    username: str
    password: str

    def session(self, token: str | None = None) -> requests.Session:
        """A client of the server, never through a proxy; with ``token`` as its bearer."""
        session = requests.Session()
        session.trust_env = False
        if token:
            session.headers["Authorization"] = f"Bearer {token}"
        return session

    def token(self) -> str:
        """A JWT of the admin, as the UI gets one (POST /auth/token)."""
        response = self.session().post(
            f"{self.base_url}/auth/token",
            json={"username": self.username, "password": self.password},
            timeout=30,
        )
        response.raise_for_status()
        return response.json()["access_token"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def geohub_server(
    harvest_dsn: str, home: Path, port: int | None = None, env: dict[str, str] | None = None
) -> Iterator[GeoHubServer]:
    """An API server searching ``harvest_dsn``, its files in ``home``, on ``port`` (default: a free one),
    with ``env`` added to its environment; stopped on leaving. PostgreSQL must be running; Airflow's
    metadata database is created or upgraded if needed."""
    password = secrets.token_urlsafe(12)
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": password}))
    port = port or free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = (
        stack_airflow.environment()
        | {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__LAZY_LOAD_PLUGINS": "False",  # a plugin that fails to import fails the start
            "AIRFLOW_CONN_GEOWEB_DB": harvest_dsn,
        }
        | (env or {})
    )
    service = Service(
        "geohub-api-server", (str(stack_airflow.AIRFLOW_BIN), "api-server"), (f"{base_url}/api/v2/monitor/health",),
        env, run_dir=home, log_dir=home, stop_timeout=15,
    )  # fmt: skip
    stack_airflow.migrate()
    try:
        supervisor.start([service], timeout=START_TIMEOUT)
    except StartError as exc:
        raise StartError(f"{exc}\n{service.output.read_text()[-3000:]}") from None
    try:
        yield GeoHubServer(base_url, "admin", password)
    finally:
        supervisor.stop(service)
