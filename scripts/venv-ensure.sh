#!/usr/bin/env bash
# venv-ensure.sh VENV LOCK: makes VENV (Python 3.11) hold exactly the lock LOCK, with uv; idempotent, and
# instant when the lock has not changed since the last install (its hash is kept in VENV/.lock.sha256).
set -euo pipefail

venv="$1"
lock="$2"
name="$(basename "$venv")"
stamp="$venv/.lock.sha256"
want="$(sha256sum "$lock" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$name is up to date"
    exit 0
fi
[[ -x "$venv/bin/python" ]] || uv venv -q --python 3.11 "$venv"
uv pip install -q --python "$venv/bin/python" -r "$lock"
echo "$want" > "$stamp"
echo "$name installed from $(basename "$(dirname "$lock")")/$(basename "$lock")"
