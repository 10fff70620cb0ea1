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

stamp="$venv/.lock.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo ".venv-testweb is up to date"
    exit 0
fi
[[ -x "$venv/bin/python" ]] || uv venv -q --python 3.11 "$venv"
uv pip install -q --python "$venv/bin/python" -r "$lock"
echo "$want" > "$stamp"
echo ".venv-testweb installed from testweb/requirements.txt"
