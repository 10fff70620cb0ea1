#!/usr/bin/env bash
# Installs what the test web runs on: MapServer behind lighttpd (Debian packages) and the Python servers
# (MapProxy, PyWPS, pycsw, gunicorn) in their own venv .venv-testweb from the lock testweb/requirements.txt.
# Idempotent and fast when everything is already in place.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$repo/.venv-testweb"
lock="$repo/testweb/requirements.txt"

bash "$repo/scripts/apt-ensure.sh" cgi-mapserver mapserver-bin lighttpd fcgiwrap gdal-bin
# Debian enables lighttpd as a system service on install; the test web runs its own instance on its ports.

bash "$repo/scripts/venv-ensure.sh" "$venv" "$lock"
