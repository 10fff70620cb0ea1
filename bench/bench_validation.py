"""How long validating a capabilities document takes: OWSLib (with the adapter) in the validation pool.

For every conformance document (shared corpus, tests/data/capabilities, tests/conformance/documents) and for
one large synthetic WMS (the layers of the largest corpus WMS repeated; ``synthetic_web.capabilities_documents``,
the set the services-heavy synthetic web serves), measures:

- ``pool``: ``ValidationPool.read`` as the crawl awaits it (the bytes to a worker, sniff-free full read:
  hardened parse, classification, OWSLib, adapter; the resource back), median of several runs;
- ``in-process``: ``read_capabilities`` in this process (the same work without the pool's IPC);
- ``lxml``: a plain lxml parse of the same bytes, for scale.

and prints each document, then p50, p95 and max of the pool time over all documents.

    python bench/bench_validation.py [--runs 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import timeit
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the conformance cases live in tests/

from bench.synthetic_web import capabilities_documents  # noqa: E402
from geoweb.detect.ogc import read_capabilities  # noqa: E402
from geoweb.detect.ogc.pool import ValidationPool  # noqa: E402
from geoweb.settings import Settings  # noqa: E402
from geoweb.xmlsafe import strip_bom  # noqa: E402
from tests.conformance.test_ogc_corpus import URL  # noqa: E402


def documents() -> list[tuple[str, bytes]]:
    """(name, body) of every conformance document and of the large synthetic WMS, as the services-heavy
    synthetic web serves them."""
    return sorted(capabilities_documents().items())


def best_seconds(func, run_seconds: float = 0.02) -> float:
    """The fastest of five runs, each looping ``func`` for about ``run_seconds``."""
    timer = timeit.Timer(func)
    once = timer.timeit(number=1)
    loops = max(1, int(run_seconds / max(once, 1e-7)))
    return min(timer.repeat(repeat=5, number=loops)) / loops


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered) + 0.5) - 1))]


async def pool_seconds(pool: ValidationPool, body: bytes, runs: int, max_bytes: int) -> tuple[float, int]:
    """The median time of ``runs`` reads through the pool, and the datasets read."""
    times, datasets = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        resource = await pool.read(body, URL, max_bytes)
        times.append(time.perf_counter() - started)
        datasets = len(resource.datasets)
    return statistics.median(times), datasets


async def measure(runs: int, workers: int) -> list[dict]:
    settings = Settings(validation_workers=workers)
    pool = ValidationPool(
        settings.validation_workers, settings.validation_timeout, settings.validation_memory_bytes
    )
    rows = []
    try:
        await pool.read(documents()[0][1], URL, settings.max_xml_bytes)  # start the workers
        for label, body in documents():
            seconds, datasets = await pool_seconds(pool, body, runs, settings.max_xml_bytes)
            rows.append({
                "label": label,
                "kb": len(body) / 1024,
                "datasets": datasets,
                "pool": seconds,
                "in_process": best_seconds(lambda body=body: read_capabilities(body, URL)),
                "lxml": best_seconds(lambda body=body: etree.fromstring(strip_bom(body))),
            })  # fmt: skip
    finally:
        pool.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="reads of each document through the pool (default 5)"
    )
    parser.add_argument("--workers", type=int, default=Settings().validation_workers, help="pool workers")
    args = parser.parse_args()
    if not documents():
        print("no capabilities documents found")
        return 1
    rows = asyncio.run(measure(args.runs, args.workers))
    print(f"{'document':<58} {'sets':>5} {'KB':>7} {'lxml ms':>8} {'in-process ms':>13} {'pool ms':>8}")
    for r in rows:
        print(f"{r['label']:<58} {r['datasets']:>5} {r['kb']:>7.1f} {r['lxml'] * 1e3:>8.2f} "
              f"{r['in_process'] * 1e3:>13.2f} {r['pool'] * 1e3:>8.2f}")  # fmt: skip
    pool = [r["pool"] for r in rows]
    print(f"validation in the pool over {len(rows)} documents: p50 {percentile(pool, 0.5) * 1e3:.1f} ms, "
          f"p95 {percentile(pool, 0.95) * 1e3:.1f} ms, max {max(pool) * 1e3:.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
