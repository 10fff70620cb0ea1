#!/usr/bin/env bash
# The main job on the bundled local GeoWeb: start the test web of real OGC servers, crawl it from its seed
# pages, and show what was found. The test web stays up for exploring; `make stop` stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=var/demo
mkdir -p "$out"

.venv/bin/python -m testweb start
mapfile -t seeds < <(.venv/bin/python -c 'import json; print("\n".join(json.load(open("var/testweb/manifest.json"))["seeds"]))')
seed_args=()
for seed in "${seeds[@]}"; do seed_args+=(--seed "$seed"); done

echo
echo "== geoweb crawl from ${seeds[*]}"
.venv/bin/geoweb --log-level WARNING crawl "${seed_args[@]}" --max-level 5 --allow-host 127.0.0.1 \
  --output "$out/resources.jsonl" --plot "$out/levels.png"

echo
echo "== resources found"
.venv/bin/python - "$out/resources.jsonl" <<'PY'
import json, sys

records = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
for r in sorted(records, key=lambda r: (r["level"], r["type"], r["url"])):
    bbox = ", ".join(f"{v:.2f}" for v in r["bbox"]) if r["bbox"] else "no bbox"
    title = (r["title"] or "")[:40]
    print(f"L{r['level']} {r['type']:9} {r['version'] or '':6} {r['datasets']:>3} datasets  {title:40}  {r['url']}  [{bbox}]")
PY
echo
echo "Results: $out/resources.jsonl (JSON lines), plot: $out/levels.png"
echo "The test web is still running (python -m testweb status); stop it with: make stop"
