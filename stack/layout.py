"""Where the local stack keeps its files and which ports it uses."""

from __future__ import annotations

import hashlib
from pathlib import Path

from geoweb import local_stack

REPO = Path(__file__).resolve().parents[1]
VAR = REPO / "var" / "stack"
RUN = VAR / "run"
LOGS = VAR / "logs"

PG_VERSION = "15"  # Debian 12's PostgreSQL
PG_BIN = Path("/usr/lib/postgresql") / PG_VERSION / "bin"
# The cluster lives where the postgres user can reach it whatever the clone's folder allows (a clone under
# /root is out of its reach): one folder per clone, named by a hash of the clone's path.
PG_HOME = Path("/var/lib/geoweb") / hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
PG_DATA = PG_HOME / "pg"
PG_LOG = PG_HOME / "postgres.log"
PG_DATA_IN_CLONE = VAR / "pg"  # a cluster found here is moved to PG_DATA when the stack starts
PG_PORT = 15432
REDIS_PORT = 16379

# Local-only credentials of the stack's own databases; a deployment sets its own (docker/.env). Airflow masks
# a connection's password wherever it appears in task logs, so it must be no word of ordinary text.
GEOWEB_DB = f"postgresql://geoweb:geoweb-local@127.0.0.1:{PG_PORT}/geoweb"
GEOWEB_DB_FILE = REPO / local_stack.DSN_FILE  # while PostgreSQL runs: how `geoweb` finds GEOWEB_DB unset
AIRFLOW_DB = f"postgresql+psycopg2://airflow:airflow-local@127.0.0.1:{PG_PORT}/airflow"
REDIS_URL = f"redis://127.0.0.1:{REDIS_PORT}/0"
CELERY_BROKER_URL = f"redis://127.0.0.1:{REDIS_PORT}/1"  # apart from database 0, which tests flush

AIRFLOW_HOME = VAR / "airflow"
API_PORT = 8080  # the Airflow UI and REST API
API_URL = f"http://127.0.0.1:{API_PORT}"
SCHEDULER_HEALTH_PORT = 8974
CATALOGUE_PORT = 8090  # pycsw and pygeoapi; GeoHub forwards /geohub/csw and /geohub/records to it
