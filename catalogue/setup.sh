#!/usr/bin/env bash
# Installs the catalogue's servers (pycsw, pygeoapi, gunicorn) in their own venv .venv-catalogue from the lock
# catalogue/requirements.txt: their dependencies cannot share Airflow's (docs/catalogue.md). Idempotent.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$repo/scripts/venv-ensure.sh" "$repo/.venv-catalogue" "$repo/catalogue/requirements.txt"
