#!/usr/bin/env bash
# The main job end to end on this machine: start the stack (PostgreSQL with PostGIS, Redis, the catalogue, the
# Airflow API server, scheduler, DAG processor and triggerer, two Celery workers) and the local test web of real OGC
# servers, trigger geoweb_crawl through Airflow's REST API, wait for it, and show what it loaded into PostGIS.
# Everything stays up for exploring; `make stop` stops it. A second run reuses what is running.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== the stack (python -m stack start)"
.venv/bin/python -m stack start
echo
echo "== the local test web (python -m testweb start)"
.venv/bin/python -m testweb start
echo
echo "== geoweb_crawl on the test web, through Airflow"
.venv/bin/python -m stack.demo
echo
echo "== the geoweb command (docs/cli.md)"
echo "Put it on the PATH of this shell:"
echo "  export PATH=\"$PWD/.venv/bin:\$PATH\""
echo "then, for example (without GEOWEB_DB it uses the stack's database, and says so):"
echo "  geoweb export --run latest --format gpkg --output var/demo/latest.gpkg"
echo "  geoweb export --run latest --format csv --layer datasets --output var/demo/datasets.csv"
echo "  geoweb crawl --help"
