"""GeoHub's export of a search (``/geohub/api/export``) on the generated corpus of bench_search (100,000
resources, 1,000,000 datasets): wall time, peak memory and file size of each format.

Each format is exported in a process of its own, as the route does it (``geoweb.geohub.exports.export_search``
on a connection of the search pool, into a temporary file), the whole corpus being one search's matches (no
filter) at the default limit of 100,000 resources: GeoPackage with both layers, the one-table formats with
``resources`` and, for GeoParquet, ``datasets`` too. Peak memory is the process's peak resident set, and its
growth over the same process with the libraries the writers use already loaded.

    .venv/bin/python -m bench.bench_search --no-http --requests 10   # generate the corpus first, if needed
    .venv/bin/python -m bench.bench_export                           # results in var/bench/results-export.json
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_search import counts, scratch_dsn
from geoweb.geohub import SearchDatabase, SearchQuery
from geoweb.geohub.exports import export_search
from geoweb.settings import Settings
from stack.layout import REPO

RESULTS = REPO / "var" / "bench" / "results-export.json"
CASES = [("gpkg", None), ("geojson", None), ("csv", None), ("parquet", None), ("parquet", "datasets"),
         ("jsonl", None)]  # fmt: skip
MB = 1024 * 1024


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def one(fmt: str, layer: str | None) -> dict:
    """One export in this process, with its figures."""
    import pyarrow.parquet  # noqa: F401  (loaded first: the growth measured is the export's own)
    import pyogrio  # noqa: F401
    import pyproj  # noqa: F401

    limit = Settings().export_max_resources
    database = SearchDatabase(scratch_dsn)
    before = peak_rss()
    try:
        with tempfile.TemporaryDirectory() as folder, database.connection() as conn:
            path = Path(folder) / f"export.{fmt}"
            started = time.monotonic()
            rows = export_search(conn, SearchQuery.checked(), path, fmt, layer, limit)
            seconds = time.monotonic() - started
            size = path.stat().st_size
    finally:
        database.close()
    peak = peak_rss()
    return {"format": fmt, "layer": layer, "rows": rows, "seconds": round(seconds, 1), "bytes": size,
            "peak_rss": peak, "growth": peak - before}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--one", nargs=2, metavar=("FORMAT", "LAYER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        fmt, layer = args.one
        print(json.dumps(one(fmt, None if layer == "-" else layer)))
        return 0
    have = counts(scratch_dsn())
    if have is None:
        print("no corpus: run .venv/bin/python -m bench.bench_search first", file=sys.stderr)
        return 1
    print(f"{have[0]:,} resources, {have[1]:,} datasets")
    print(f"{'format':<18} {'rows':<34} {'seconds':>7} {'MB':>7} {'peak MB':>8} {'growth MB':>9}")
    results = []
    for fmt, layer in CASES:
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_export", "--one", fmt, layer or "-"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        figures = json.loads(done.stdout)
        results.append(figures)
        rows = ", ".join(f"{k} {v:,}" for k, v in figures["rows"].items())
        print(
            f"{fmt + (f' ({layer})' if layer else ''):<18} {rows:<34} {figures['seconds']:>7.1f} "
            f"{figures['bytes'] / MB:>7.0f} {figures['peak_rss'] / MB:>8.0f} {figures['growth'] / MB:>9.0f}"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"resources": have[0], "datasets": have[1], "exports": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
