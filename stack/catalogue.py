"""The catalogue (docs/catalogue.md): pycsw and pygeoapi in one gunicorn process of their own venv
(.venv-catalogue, catalogue/setup.sh), reading the harvest database's view ``pycsw_records``. GeoHub, in the
Airflow API server, forwards ``/geohub/csw`` and ``/geohub/records`` to it; both advertise those public
addresses."""

from __future__ import annotations

from stack import postgres, supervisor
from stack.layout import API_URL, CATALOGUE_PORT, GEOWEB_DB, LOGS, REPO, RUN, VAR
from stack.supervisor import Service, StartError

VENV = REPO / ".venv-catalogue"
URL = f"http://127.0.0.1:{CATALOGUE_PORT}"  # what GeoHub forwards to (GEOWEB_CATALOGUE_UPSTREAM)
PUBLIC_URL = f"{API_URL}/geohub"  # where users find it: PUBLIC_URL/csw and PUBLIC_URL/records


def command(port: int) -> tuple[str, ...]:
    """gunicorn serving catalogue.wsgi on ``port``, on loopback: two workers, each serving a request while
    pygeoapi's provider asks the process's pycsw."""
    return (
        str(VENV / "bin" / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", "2",
        "--worker-class", "gthread", "--threads", "4", "--timeout", "90", "--no-control-socket",
        "catalogue.wsgi:application",
    )  # fmt: skip


def environment(harvest_dsn: str, public_url: str, port: int, state: str) -> dict[str, str]:
    """The catalogue process's settings (catalogue/wsgi.py): the harvest database, the public address, its
    own port, and where pygeoapi's OpenAPI document is written (under ``state``)."""
    return {
        "GEOWEB_CATALOGUE_DB": harvest_dsn,
        "GEOWEB_CATALOGUE_URL": public_url,
        "GEOWEB_CATALOGUE_PORT": str(port),
        "PYGEOAPI_OPENAPI": f"{state}/pygeoapi-openapi.yml",
    }


SERVICE = Service(
    "catalogue", command(CATALOGUE_PORT), (f"{URL}/records?f=json",),
    environment(GEOWEB_DB, PUBLIC_URL, CATALOGUE_PORT, str(VAR / "catalogue")), run_dir=RUN, log_dir=LOGS,
)  # fmt: skip


def running() -> bool:
    return supervisor.is_up(SERVICE)


def start() -> None:
    """Starts PostgreSQL if needed, then the catalogue; its view appears with the store's migrations."""
    if not (VENV / "bin" / "gunicorn").exists():
        raise StartError(f"{VENV} is missing: run scripts/setup.sh (or catalogue/setup.sh)")
    postgres.start()
    supervisor.start([SERVICE])


def stop() -> None:
    supervisor.stop(SERVICE)


def status() -> str:
    return (
        f"catalogue {supervisor.state(SERVICE)} ({URL}, public at {PUBLIC_URL}/csw and {PUBLIC_URL}/records)"
    )
