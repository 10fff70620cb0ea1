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
