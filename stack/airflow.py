"""Airflow 3 with the CeleryExecutor: the API server (UI, REST and execution API), scheduler, DAG processor
and triggerer. The Celery workers are their own component (stack/workers.py).

Every Airflow process of the stack, and every test or script that talks to it, takes its settings from
``environment()``; AIRFLOW_HOME (var/stack/airflow) holds only what is generated: airflow.cfg (with the
Fernet key), the admin password file and the token-signing key (written once, owner-only), the task logs.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from geoweb_airflow import CRAWL_POOL
from stack import catalogue, postgres, redis, supervisor
from stack.airflow_api import ADMIN, PASSWORDS_FILE, AirflowClient, AirflowError
from stack.layout import (
    AIRFLOW_DB,
    AIRFLOW_HOME,
    API_PORT,
    API_URL,
    CELERY_BROKER_URL,
    GEOWEB_DB,
    LOGS,
    REDIS_PORT,
    REPO,
    RUN,
    SCHEDULER_HEALTH_PORT,
)
from stack.supervisor import Service, StartError

AIRFLOW_BIN = Path(sys.executable).parent / "airflow"
DAGS = REPO / "dags"
PLUGINS = REPO / "plugins"
JWT_SECRET_FILE = AIRFLOW_HOME / "jwt_secret"  # Airflow would generate a key too short for HS512
MAIN_DAG = "geoweb_crawl"
POOL = (CRAWL_POOL, 8, "Crawl shards of geoweb_crawl running at once, over all workers")
HEARTBEAT_TIMEOUT = 30  # s without a task heartbeat before the scheduler fails (and retries) the task
START_TIMEOUT = 120.0  # the API server and scheduler answer after about 30 s on a busy 2-core machine


def environment() -> dict[str, str]:
    """The environment of every Airflow process of the stack (added to the caller's)."""
    return {
        "AIRFLOW_HOME": str(AIRFLOW_HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{API_URL}/execution/",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{ADMIN}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(PASSWORDS_FILE),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": AIRFLOW_DB,
        "AIRFLOW__CELERY__BROKER_URL": CELERY_BROKER_URL,
        "AIRFLOW__CELERY__RESULT_BACKEND": f"db+{AIRFLOW_DB}",
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": "4",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(API_PORT),
        "AIRFLOW__API__WORKERS": "2",
        "AIRFLOW__API_AUTH__JWT_SECRET_CMD": f"cat {JWT_SECRET_FILE}",
        # a killed worker's task is failed after HEARTBEAT_TIMEOUT and retried, instead of after 5 minutes
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(HEARTBEAT_TIMEOUT),
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "True",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST": "127.0.0.1",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_PORT": str(SCHEDULER_HEALTH_PORT),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",  # a new DAG file shows up within 30 s, not 5 min
        # the results database, as the Airflow Connection geoweb_db: no secret in code or in the metadata DB
        "AIRFLOW_CONN_GEOWEB_DB": GEOWEB_DB,
        # per-host politeness shared by every task of every DAG: Redis database 2, apart from the tests' 0
        # and the broker's 1
        "GEOWEB_HOST_LEASES": f"redis://127.0.0.1:{REDIS_PORT}/2",
        # GeoHub forwards /geohub/csw and /geohub/records to the catalogue's process (stack/catalogue.py)
        "GEOWEB_CATALOGUE_UPSTREAM": catalogue.URL,
    }


def _service(
    name: str, *args: str, checks: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Service:
    """An Airflow process of the stack. Logs are on this machine's disk: no process needs to serve them."""
    command = (str(AIRFLOW_BIN), *args)
    return Service(
        name, command, checks, environment() | (env or {}), run_dir=RUN, log_dir=LOGS, stop_timeout=15
    )


SERVICES = (
    _service("api-server", "api-server", checks=(f"{API_URL}/api/v2/monitor/health",)),
    _service("scheduler", "scheduler", "--skip-serve-logs",
             checks=(f"http://127.0.0.1:{SCHEDULER_HEALTH_PORT}/health",)),
    _service("dag-processor", "dag-processor"),
    _service("triggerer", "triggerer", "--skip-serve-logs"),
)  # fmt: skip


def airflow_command(*args: str) -> subprocess.CompletedProcess:
    """Runs ``airflow ARGS`` with the stack's environment; raises StartError with its output when it fails."""
    done = subprocess.run(
        [str(AIRFLOW_BIN), *args], env=os.environ | environment(), cwd=REPO, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise StartError(f"airflow {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done


def _write_secret(path: Path, text: str) -> None:
    """Writes a secret once, readable by its owner only; it stays the same from then on."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as f:
        f.write(text)


def _write_secrets() -> None:
    """The admin password (for SimpleAuthManager) and the key that signs the tokens of every component."""
    password = os.environ.get("AIRFLOW_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
    _write_secret(PASSWORDS_FILE, json.dumps({ADMIN: password}))
    _write_secret(JWT_SECRET_FILE, secrets.token_urlsafe(64))


def migrate() -> None:
    """Prepares what every Airflow process of the stack needs: its secrets (written once) and the metadata
    database, created or upgraded (idempotent; about 8 s when there is nothing to do)."""
    _write_secrets()
    airflow_command("db", "migrate")


def _wait_for_main_dag(client: AirflowClient, timeout: float) -> None:
    """Waits until the DAG processor has parsed dags/geoweb_crawl.py; its import error is the error."""
    if not (DAGS / f"{MAIN_DAG}.py").exists():
        return
    deadline = time.monotonic() + timeout
    while client.dag(MAIN_DAG) is None:
        failed = [e for e in client.import_errors() if e["filename"].endswith(f"{MAIN_DAG}.py")]
        if failed:
            raise StartError(f"{MAIN_DAG}.py does not import:\n{failed[0]['stack_trace']}")
        if time.monotonic() > deadline:
            raise StartError(f"the DAG {MAIN_DAG} was not parsed after {timeout:.0f} s; see {LOGS}")
        time.sleep(1)


def running() -> bool:
    return all(supervisor.is_up(s) for s in SERVICES)


def start() -> None:
    """Starts PostgreSQL and Redis if needed, migrates, starts the Airflow processes not running, and waits
    until the API answers, the pool exists and the main DAG is parsed."""
    postgres.start()
    redis.start()
    if running():
        return
    migrate()
    supervisor.start(SERVICES, timeout=START_TIMEOUT)
    client = AirflowClient.from_environment()
    try:
        client.ensure_pool(*POOL)
        _wait_for_main_dag(client, timeout=START_TIMEOUT)
    except AirflowError as exc:
        raise StartError(str(exc)) from exc


def stop() -> None:
    for service in reversed(SERVICES):
        supervisor.stop(service)


def status() -> str:
    return "\n".join(f"airflow {s.name} {supervisor.state(s)}" for s in SERVICES)
