#!/usr/bin/env bash
# One-off set-up of a deployment, run by the airflow-init service before any other Airflow service starts:
# Airflow's metadata database, the harvest database's schema, the crawl pool, and the admin password for
# SimpleAuthManager. Idempotent.
set -euo pipefail

airflow db migrate
GEOWEB_DB="$AIRFLOW_CONN_GEOWEB_DB" geoweb migrate  # the Connection geoweb_db's database, as the tasks read it
airflow pools set geoweb_crawl 8 "Crawl shards of geoweb_crawl running at once, over all workers"

# The password comes from the environment (docker/.env) and goes only into the file the API server reads.
python - <<'PY'
import json
import os
from pathlib import Path

path = Path(os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps({"admin": os.environ["AIRFLOW_ADMIN_PASSWORD"]}))
path.chmod(0o600)
PY
echo "airflow-init: metadata and harvest databases migrated, pool geoweb_crawl set, admin password written"
