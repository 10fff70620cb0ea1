"""How long validating a capabilities document takes, next to a plain lxml parse and to OWSLib.

For every conformance document (shared corpus, and tests/data/capabilities when captured) and for one large
synthetic WMS (the layers of the largest corpus WMS repeated), prints the best of several runs of:
a plain lxml parse, ``read_capabilities`` (hardened parse, classification, metadata), and OWSLib's client
built from the same bytes. The target: ``read_capabilities`` within 5x of the plain parse on the largest WMS.

    python bench/bench_validation.py
"""

from __future__ import annotations

import re
import sys
import timeit
import warnings
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the conformance cases and the OWSLib reference reader live in tests/

from geoweb.detect.ogc import read_capabilities  # noqa: E402
from geoweb.xmlsafe import strip_bom  # noqa: E402
from tests.conformance.test_ogc_corpus import (  # noqa: E402
    OWSLIB_UNSUPPORTED,
    URL,
    capabilities_cases,
    owslib_reading,
)

TARGET_RATIO = 5.0
SYNTHETIC_COPIES = 400


def best_seconds(func, run_seconds: float = 0.02) -> float:
    """The fastest of five runs, each looping ``func`` for about ``run_seconds``."""
    timer = timeit.Timer(func)
    once = timer.timeit(number=1)
    loops = max(1, int(run_seconds / max(once, 1e-7)))
    return min(timer.repeat(repeat=5, number=loops)) / loops


def synthetic_wms(body: bytes, copies: int) -> bytes:
    """``body`` with its top-level layer's children repeated ``copies`` times, names made unique."""
    text = body.decode("iso-8859-1")
    start = text.index("<Layer", text.index("<Layer") + 1)
    end = text.rindex("</Layer>", 0, text.rindex("</Layer>")) + len("</Layer>")
    children = text[start:end]
    repeated = "".join(
        re.sub(r"<Name>([^<]+)</Name>", rf"<Name>\1_{i}</Name>", children) for i in range(copies)
    )
    return (text[:start] + repeated + text[end:]).encode("iso-8859-1")


def measure(label: str, kind: str, version: str, body: bytes) -> dict:
    datasets = len(read_capabilities(body, URL).datasets)
    plain = strip_bom(body)  # a plain parser cannot read the stray-BOM document otherwise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Where OWSLib cannot read the version it reads nothing: no comparable time.
        owslib = (
            None
            if (kind, version) in OWSLIB_UNSUPPORTED
            else best_seconds(lambda: owslib_reading(kind, version, body))
        )
    return {
        "label": label,
        "kind": kind,
        "datasets": datasets,
        "kb": len(body) / 1024,
        "lxml": best_seconds(lambda: etree.fromstring(plain)),
        "ours": best_seconds(lambda: read_capabilities(body, URL)),
        "owslib": owslib,
    }


def _owslib_columns(row: dict) -> str:
    if row["owslib"] is None:
        return f"{'n/a':>9} {'n/a':>11}"
    return f"{row['owslib'] * 1e3:>9.3f} {row['owslib'] / row['ours']:>11.1f}"


def main() -> int:
    cases = capabilities_cases()
    if not cases:
        print("no capabilities documents found (shared corpus absent)")
        return 1
    rows = [measure(label, kind, version, path.read_bytes()) for label, path, kind, version in cases]
    wms = [(path, version) for _, path, kind, version in cases if kind == "WMS"]
    largest, version = max(wms, key=lambda pv: pv[0].stat().st_size)
    rows.append(
        measure(
            f"synthetic/{largest.name} x{SYNTHETIC_COPIES}",
            "WMS",
            version,
            synthetic_wms(largest.read_bytes(), SYNTHETIC_COPIES),
        )
    )

    header = f"{'document':<58} {'type':<5} {'sets':>5} {'KB':>7} {'lxml ms':>8} {'ours ms':>8} "
    print(header + f"{'ours/lxml':>9} {'OWSLib ms':>9} {'OWSLib/ours':>11}")
    for r in rows:
        print(
            f"{r['label']:<58} {r['kind']:<5} {r['datasets']:>5} {r['kb']:>7.1f} {r['lxml'] * 1e3:>8.3f} "
            f"{r['ours'] * 1e3:>8.3f} {r['ours'] / r['lxml']:>9.2f} " + _owslib_columns(r)
        )
    largest_row = next(r for r in rows if r["label"].endswith(largest.name))
    for r in (largest_row, rows[-1]):
        print(f"{r['label']}: read_capabilities takes {r['ours'] / r['lxml']:.2f}x a plain lxml parse")
    ratio = rows[-1]["ours"] / rows[-1]["lxml"]
    print(f"target on the largest WMS: <= {TARGET_RATIO}x -> {'met' if ratio <= TARGET_RATIO else 'MISSED'}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
