"""docker/: the compose file is valid for Docker Compose, refuses to start without its secrets, and keeps the
bare-metal stack's settings (stack/airflow.py) under the same names."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from stack import airflow, catalogue, postgres
from stack.layout import REPO

DOCKER = REPO / "docker"
LOCAL_ONLY = {"AIRFLOW_HOME"}  # the image sets it; every other setting of the stack is the deployment's too


def compose_command() -> list[str] | None:
    """Docker Compose v2 (the docker plugin) or v1 (Debian's docker-compose); None when neither is here."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def compose_config(env_file) -> subprocess.CompletedProcess:
    command = compose_command()
    if command is None:
        pytest.skip(
            "neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)"
        )
    return subprocess.run(
        [*command, "-f", str(DOCKER / "compose.yaml"), "--env-file", str(env_file), "config", "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_the_compose_file_is_valid_with_the_example_secrets():
    done = compose_config(DOCKER / ".env.example")
    assert done.returncode == 0, done.stderr


def test_a_missing_secret_stops_compose_with_its_name(tmp_path):
    env = tmp_path / ".env"
    lines = (DOCKER / ".env.example").read_text().splitlines()
    env.write_text("\n".join(line for line in lines if not line.startswith("AIRFLOW_DB_PASSWORD=")))
    done = compose_config(env)
    assert done.returncode != 0
    assert "set AIRFLOW_DB_PASSWORD in docker/.env" in done.stderr


def test_every_airflow_service_has_the_stack_settings_under_the_same_names():
    services = compose()["services"]
    airflow_services = [s for s in services.values() if s.get("image", "").startswith("geoweb-harvester")]
    assert {"airflow-init", "api-server", "scheduler", "dag-processor", "triggerer", "worker"} <= {
        name for name, s in services.items() if s in airflow_services
    }
    # a setting read from a file by a command (NAME_CMD) is the same setting NAME given by value
    expected = {name.removesuffix("_CMD") for name in airflow.environment()} - LOCAL_ONLY
    for service in airflow_services:
        assert expected <= set(service["environment"]), sorted(expected - set(service["environment"]))


def test_the_worker_scales_and_the_results_go_to_postgis():
    services = compose()["services"]
    assert "container_name" not in services["worker"]  # --scale worker=N needs names Compose picks
    assert services["postgis"]["image"].startswith("postgis/postgis:")
    assert services["worker"]["environment"]["AIRFLOW_CONN_GEOWEB_DB"].startswith("postgresql://geoweb:")


def test_the_results_database_has_the_stack_cache_size():
    command = " ".join(compose()["services"]["postgis"]["command"])
    assert f"shared_buffers=${{GEOWEB_DB_SHARED_BUFFERS:-{postgres.SHARED_BUFFERS}}}" in command


def test_the_init_sets_the_stack_pool():
    name, slots, _ = airflow.POOL
    init = (DOCKER / "airflow-init.sh").read_text()
    assert re.search(rf"^airflow pools set {name} {slots} ", init, re.MULTILINE)


def test_the_catalogue_has_the_stack_settings_and_no_published_port():
    service = compose()["services"]["catalogue"]
    # the image sets the port and where the OpenAPI document goes
    expected = set(catalogue.environment("", "", 0, "")) - {"GEOWEB_CATALOGUE_PORT", "PYGEOAPI_OPENAPI"}
    assert expected <= set(service["environment"])
    assert "ports" not in service  # only GeoHub, in the API server, reaches it


def test_airflow_init_migrates_the_harvest_database_once_postgis_is_up():
    init = compose()["services"]["airflow-init"]
    assert init["depends_on"]["postgis"]["condition"] == "service_healthy"
    assert 'GEOWEB_DB="$AIRFLOW_CONN_GEOWEB_DB" geoweb migrate' in (DOCKER / "airflow-init.sh").read_text()
