#!/usr/bin/env bash
# Installs everything the project needs on a Debian machine, as root, idempotently:
# Debian packages, the pinned Python environment (.venv) and the local test web's servers.
set -euo pipefail
cd "$(dirname "$0")/.."

# The catalogue and the local test web install their own servers in their own venvs (catalogue/setup.sh,
# testweb/setup.sh, called last).
APT_PACKAGES=(
  python3 python3-venv  # Python 3.11 on Debian 12; the lock is for 3.11
  nginx-light  # serves the synthetic web of the crawl benchmark
  procps curl  # process and HTTP tools of the start/stop scripts
  postgresql postgresql-15-postgis-3 redis-server  # the results store and the Celery broker
  docker-compose  # checks docker/compose.yaml (`docker-compose config`); no engine runs here
  chromium  # the GeoHub page's end-to-end test, headless
)

bash scripts/apt-ensure.sh "${APT_PACKAGES[@]}"

PYTHON=$(command -v python3.11 || command -v python3)
if [[ ! -x .venv/bin/uv ]]; then
  # uv (pinned in the lock) installs the lock in seconds; pip only bootstraps it inside the venv
  [[ -x .venv/bin/python ]] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip >/dev/null
  .venv/bin/python -m pip install -q --disable-pip-version-check "$(grep -E '^uv==' requirements.txt)"
fi
export PATH="$PWD/.venv/bin:$PATH"

stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "setup: building .venv from requirements.txt"
  uv pip install -q --python .venv/bin/python -r requirements.txt
  uv pip install -q --python .venv/bin/python --no-deps -e .
  echo "$want" >"$stamp"
fi

bash catalogue/setup.sh
bash testweb/setup.sh
