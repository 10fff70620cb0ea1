"""Peak memory of one ``geoweb crawl`` process against inputs built to exhaust it (docs/reliability.md#bounded-memory).

Each test serves one hostile input on loopback, crawls it with ``geoweb crawl`` in a subprocess, and reads
that process's peak resident set size (``VmHWM`` of /proc/self/status, read by the process itself as it
exits: ``ru_maxrss`` would report the forking parent's peak, which Linux carries across exec), with its
resident size when its memory budget was made (the start ``max_memory_bytes`` counts from). The bound is
the ``max_memory_bytes`` setting (400 MB); each test also checks the input was found, so a crawl that
skipped it cannot pass.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import sys
from pathlib import Path

import pytest
from aiohttp import web

from geoweb.settings import MB, Settings
from tests.data.files.make_fixtures import serve, shapefile_members, zip_bytes

ROOT = Path(__file__).resolve().parents[2]
LIMIT = Settings().max_memory_bytes
# Runs the CLI in a fresh interpreter and writes its own peak RSS and its RSS when the memory budget was
# made, in bytes, where GEOWEB_PEAK_FILE says.
MEASURED = (
    "import os, sys\n"
    "from geoweb.cli import main\n"
    "from geoweb.fetch import memory\n"
    "starts = []\n"
    "made = memory.MemoryBudget.__init__\n"
    "def record(budget, *args, **kwargs):\n"
    "    made(budget, *args, **kwargs)\n"
    "    starts.append(budget.baseline)\n"
    "memory.MemoryBudget.__init__ = record\n"
    "try:\n"
    "    code = main(sys.argv[1:])\n"
    "finally:\n"
    "    status = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
    "    start = starts[0] if starts else 0\n"
    "    open(os.environ['GEOWEB_PEAK_FILE'], 'w').write(f'{int(status) * 1024} {start}')\n"
    "sys.exit(code)\n"
)


def crawl_peak(
    tmp_path: Path, routes: dict, seed: str, *args: str, env: dict | None = None
) -> tuple[int, int, list[dict]]:
    """(peak RSS in bytes, RSS as its memory budget was made, resources found) of ``geoweb crawl`` from
    ``seed`` (a path) over ``routes``, its stderr in ``tmp_path / "stderr"``; ``env`` adds settings
    (GEOWEB_*)."""

    async def run():
        async with serve(routes) as base:
            host = base.removeprefix("http://")
            output, peak = tmp_path / "found.jsonl", tmp_path / "peak"
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", MEASURED, "crawl", "--seed", base + seed, "--allow-host", host,
                "--max-level", "1", "--output", str(output), *args,
                env={**os.environ, **(env or {}), "GEOWEB_PEAK_FILE": str(peak),
                     "PYTHONPATH": os.pathsep.join([str(ROOT / "include"), os.environ.get("PYTHONPATH", "")])},
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
            _, stderr = await asyncio.wait_for(process.communicate(), timeout=240)
            assert process.returncode == 0, stderr.decode()[-2000:]
            (tmp_path / "stderr").write_bytes(stderr)
            found = [json.loads(line) for line in output.read_text().splitlines()]
            highest, start = (int(value) for value in peak.read_text().split())
            return highest, start, found

    return asyncio.run(run())


def page(*links: str):
    """A handler answering an HTML page that links ``links``."""
    anchors = "".join(f'<a href="{link}">{link}</a>' for link in links)

    async def handle(request):
        return web.Response(text=f"<html><body>{anchors}</body></html>", content_type="text/html")

    return handle


def report(name: str, peak: int) -> None:
    print(f"\npeak RSS, {name}: {peak / MB:.0f} MB (bound {LIMIT / MB:.0f} MB)")
    assert peak < LIMIT


def crawl_file(tmp_path: Path, name: str, body: bytes, content_type: str, kind: str) -> list[dict]:
    """The resources of a crawl of a page linking the file ``name``; its peak memory reported and bounded."""

    async def file(request):
        return web.Response(body=body, content_type=content_type)

    peak, _, found = crawl_peak(tmp_path, {"/": page(f"/{name}"), f"/{name}": file}, "/", "--types", kind)
    report(f"{len(body) / MB:.1f} MB {kind} file", peak)
    return found


# --- a 5 MB KMZ: its KML streamed, never a tree --------------------------------------------------------------


def big_kmz() -> bytes:
    """About 5 MB of KMZ whose doc.kml is some 45 MB of small placemarks (random coordinates of four
    decimals compress about 9:1): millions of elements, as exports of point layers are."""
    rng = random.Random(14)
    placemarks = "".join(
        f"<Placemark><Point><coordinates>{rng.uniform(14, 16):.4f},{rng.uniform(44, 46):.4f}</coordinates>"
        "</Point></Placemark>"
        for _ in range(620_000)
    )
    kml = ('<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Tracks</name>'
           + placemarks + "</Document></kml>").encode()  # fmt: skip
    return zip_bytes({"doc.kml": kml})


def test_a_5_mb_kmz_stays_under_the_memory_bound(tmp_path):
    kmz = big_kmz()
    assert 4 * MB < len(kmz) < 7 * MB
    found = crawl_file(tmp_path, "tracks.kmz", kmz, "application/vnd.google-earth.kmz", "KML")
    assert [(r["type"], r["title"], r["extra"]["placemarks"]) for r in found] == [("KML", "Tracks", 620_000)]


# --- six capabilities probes of 2 MB gzip each: under the body cap, one at a time --------------------------


WORDS = "river lake road forest soil slope basin coast".split()


def big_capabilities(layers: int) -> bytes:
    """A WMS 1.3.0 capabilities document of ``layers`` layers with long abstracts of random words from a small
    vocabulary (7,400 layers: some 19 MB, which gzip brings to about 2 MB)."""
    rng = random.Random(7)
    layers = "".join(
        f'<Layer queryable="1"><Name>l{i}</Name><Title>Layer {i}</Title>'
        f"<Abstract>{' '.join(rng.choices(WORDS, k=400))}</Abstract>"
        f"<EX_GeographicBoundingBox><westBoundLongitude>{rng.uniform(-180, 0):.5f}</westBoundLongitude>"
        f"<eastBoundLongitude>{rng.uniform(0, 180):.5f}</eastBoundLongitude><southBoundLatitude>-10</southBoundLatitude>"
        f"<northBoundLatitude>10</northBoundLatitude></EX_GeographicBoundingBox></Layer>"
        for i in range(layers)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms">'
        "<Service><Name>WMS</Name><Title>Big</Title></Service><Capability><Request><GetCapabilities><Format>text/xml"
        "</Format></GetCapabilities></Request><Layer><Title>Root</Title>" + layers + "</Layer></Capability></WMS_Capabilities>"
    ).encode()  # fmt: skip


@pytest.mark.parametrize(
    ("layers", "requests", "found"),
    [
        (7_400, 8, []),  # 19 MB decoded: the page and seven probes (WMS too), each cut at the 10 MB body cap
        (3_500, 7, ["WMS"]),  # 9 MB decoded: the page read, then the six other types' probes, one at a time
    ],
    ids=["19MB-over-the-cap", "9MB"],
)
def test_six_capabilities_probes_of_2_mb_gzip_stay_under_the_memory_bound(tmp_path, layers, requests, found):
    document = big_capabilities(layers)
    compressed = gzip.compress(document, 6)
    assert len(compressed) < 4 * MB
    asked = []

    async def ows(request):
        asked.append(request.query.get("service"))
        return web.Response(body=compressed, headers={"Content-Type": "text/xml", "Content-Encoding": "gzip"})

    routes = {"/": page("/ows?service=WMS&request=GetCapabilities"), "/ows": ows}
    # Reading 9 MB of capabilities takes OWSLib about 6 s of CPU (bench/README.md), near the 10 s
    # validation_timeout, whose miss would probe WMS again; this test bounds memory, not parse time.
    peak, _, records = crawl_peak(tmp_path, routes, "/", env={"GEOWEB_VALIDATION_TIMEOUT": "120"})
    report(
        f"six {len(compressed) / MB:.1f} MB gzip capabilities probes ({len(document) / MB:.0f} MB decoded)",
        peak,
    )
    assert asked.count("WMS") >= 1 and len(asked) == requests
    assert [r["type"] for r in records] == found


# --- a 2.6 MB shapefile ZIP: its headers read, its members never copied -------------------------------------


def test_a_2_6_mb_shapefile_zip_stays_under_the_memory_bound(tmp_path):
    from shapely.geometry import Point

    rng = random.Random(3)
    points = [Point(rng.uniform(500_000, 520_000), rng.uniform(5_000_000, 5_020_000)) for _ in range(120_000)]
    archive = zip_bytes(shapefile_members(tmp_path, "wells", geometries=points))
    assert 2 * MB < len(archive) < 4 * MB
    [resource] = crawl_file(tmp_path, "wells.zip", archive, "application/zip", "SHAPEFILE")
    assert resource["type"] == "SHAPEFILE" and resource["dataset_list"][0]["extra"]["features"] == 120_000


# --- a plain KML and a GeoJSON over the body cap: streamed, or read from their head -------------------------


def big_kml() -> bytes:
    """Some 30 MB of plain KML (no KMZ: no Range path), 400,000 placemarks in a named document."""
    rng = random.Random(12)
    placemarks = "".join(
        f"<Placemark><Point><coordinates>{rng.uniform(14, 16):.5f},{rng.uniform(44, 46):.5f}</coordinates>"
        "</Point></Placemark>"
        for _ in range(400_000)
    )
    return ('<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Wells</name>'
            + placemarks + "</Document></kml>").encode()  # fmt: skip


def test_a_30_mb_plain_kml_is_streamed_under_the_memory_bound(tmp_path):
    kml = big_kml()
    assert 25 * MB < len(kml) < 40 * MB
    found = crawl_file(tmp_path, "wells.kml", kml, "application/vnd.google-earth.kml+xml", "KML")
    assert [(r["title"], r["extra"]["placemarks"]) for r in found] == [("Wells", 400_000)]


def test_a_30_mb_geojson_is_read_from_its_head_under_the_memory_bound(tmp_path):
    rng = random.Random(13)
    features = ",".join(
        f'{{"type":"Feature","properties":{{"id":{i}}},"geometry":{{"type":"Point",'
        f'"coordinates":[{rng.uniform(14, 16):.5f},{rng.uniform(44, 46):.5f}]}}}}'
        for i in range(330_000)
    )
    body = (
        '{"type":"FeatureCollection","name":"wells","bbox":[14,44,16,46],"features":[' + features + "]}"
    ).encode()
    assert 25 * MB < len(body) < 40 * MB
    found = crawl_file(tmp_path, "wells.geojson", body, "application/geo+json", "GEOJSON")
    assert [(r["title"], r["bbox"]) for r in found] == [("wells", [14.0, 44.0, 16.0, 46.0])]


# --- max_memory_bytes enforced: bodies admitted under it, one that cannot fit deferred ----------------------


def html_of(size: int) -> bytes:
    return b"<html><body>" + b"<p>" + b"x" * (size - 40) + b"</p></body></html>"


PAGE, PAGES, BOUND = 6 * MB, 8, 40 * MB
# Bigger than the bound itself, so that it cannot fit whatever else the crawl holds: what the process takes
# above its start besides bodies (the detectors' imports, the Bloom filter: some 10-18 MB) varies with the
# allocator and the bytecode caches, and a body under the bound may fit beside it or not.
BIG = 56 * MB
# The budget admits a body against what the process holds when it asks; a page read meanwhile is then
# decoded and parsed for its links (one at a time, on the event loop): its text and tree come on top.
OVERSHOOT = 2 * PAGE


def test_bodies_are_admitted_under_max_memory_bytes_and_one_that_cannot_fit_is_deferred(tmp_path):
    """Eight 6 MB pages at once (a host allowing eight requests) and one of 56 MB, under a bound of 40 MB
    for the crawl's memory: the pages, 48 MB together, wait for each other's reads and are all read; the one
    bigger than the bound is deferred with a logged reason (and read whole without the bound); the crawl's
    peak stays within the bound of its start, but for the page in hand."""
    assert PAGES * PAGE > BOUND > 2 * PAGE and BIG > BOUND + OVERSHOOT
    pages = {f"/p{i}.html": html_of(PAGE) for i in range(PAGES)} | {"/big.html": html_of(BIG)}

    def serve_page(body):
        async def handle(request):
            return web.Response(body=body, content_type="text/html")

        return handle

    routes = {"/": page(*pages)} | {path: serve_page(body) for path, body in pages.items()}
    settings = {"GEOWEB_PER_HOST_CONCURRENCY": str(PAGES), "GEOWEB_MAX_BODY_BYTES": str(64 * MB)}

    def crawl(name: str, env: dict) -> tuple[int, str, str]:
        """(peak RSS above the start, stderr, its level and refusal lines) of a crawl with ``env``."""
        folder = tmp_path / name
        folder.mkdir()
        peak, start, _ = crawl_peak(folder, routes, "/", env=settings | env)
        stderr = (folder / "stderr").read_text()
        told = "\n".join(line for line in stderr.splitlines() if "level 1:" in line or "not read" in line)
        return peak - start, stderr, told

    unbounded, stderr, told = crawl("unbounded", {})
    assert "level 1: 9 URLs fetched, 0 failed, 0 deferred" in stderr, told
    bounded, stderr, told = crawl("bounded", {"GEOWEB_MAX_MEMORY_BYTES": str(BOUND)})
    print(f"\npeak RSS above the start, eight 6 MB pages and one of 56 MB at once: {unbounded / MB:.0f} MB "
          f"unbounded, {bounded / MB:.0f} MB with max_memory_bytes at {BOUND / MB:.0f} MB")  # fmt: skip
    assert "/big.html: body of 56.0 MB not read (no room left)" in stderr, told
    assert "level 1: 8 URLs fetched, 0 failed, 1 deferred" in stderr, told
    # the big body alone, read whole, is more than the bounded crawl may reach
    assert bounded <= BOUND + OVERSHOOT < BIG <= unbounded
