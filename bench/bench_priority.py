"""What topical link priority buys on a synthetic web with topics: recall of KML files under a link budget.

The web (written here, served by nginx with ``synthetic_web``'s server) is a tree per host, as in
``synthetic_web``, plus random links, where each page is about geodata or about something else. A geodata page
links mostly to geodata pages and to one or two KML files; other pages mostly to other pages. Anchors tell
the topic of the page they lead to, but not always: 20 % of the links to geodata pages carry a neutral anchor
and 10 % of the others a geodata one. Page URLs say nothing; KML URLs end in ``.kml``.

One full crawl gives the recall curve (by score and by a random order); crawls under budgets of 25 % and 50 %
give what a budget really finds and fetches. Prints a Markdown table; writes the figures to var/bench/.

``--scale N`` measures the recall curve of a synthetic run of N recorded URLs instead: in process
(``recall_curve``) and from the harvest's database (``Runs.recall_curve``, in a scratch database of the
local PostgreSQL, dropped afterwards), with the level budget of its largest level
(``Frontier.skip_over_budget``).

    .venv/bin/python -m bench.bench_priority            # 8,000 pages over 8 hosts
    .venv/bin/python -m bench.bench_priority --quick    # 1,600 pages
    .venv/bin/python -m bench.bench_priority --scale 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict
from pathlib import Path

import psycopg2

from bench.synthetic_web import (
    DEFAULT_ROOT,
    MANIFEST,
    MAX_LEVEL,
    WebSpec,
    page_path,
    reusable,
    start_nginx,
    stop_nginx,
    tree_fanout,
    web_dir,
)
from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.links.priority import DEPTH_WEIGHT, LinkScorer, recall_curve
from geoweb.models import RecordedLink
from geoweb.settings import Settings
from geoweb.store import Store
from stack import postgres as stack_postgres

ROOT = DEFAULT_ROOT / "priority"
GENERATOR = "topical-1"  # bump when the web below changes
GEO_ANCHORS = (
    "Map layers", "Geospatial data", "WMS services", "Elevation dataset", "GIS downloads",
    "Spatial data catalogue", "Land cover maps", "Geoportal", "Boundaries (shapefile and KML)", "Metadata",
)  # fmt: skip
OTHER_ANCHORS = (
    "News", "Read more", "Events calendar", "About us", "Contact", "Annual report", "Press releases", "Staff",
    "Next", "Archive", "Jobs", "Newsletter",
)  # fmt: skip
KML_NAMES = ("rivers", "parks", "trails", "districts", "stations", "lakes", "roads", "wells")
KML = """<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>{name}</name>
<Placemark><name>{name}</name><Point><coordinates>{x:.4f},{y:.4f}</coordinates></Point></Placemark>
</Document></kml>
"""
GEO_CHILD = {True: 0.7, False: 0.1}  # chance that a page's child is about geodata, by the page's topic
HONEST_ANCHOR = {True: 0.8, False: 0.9}  # chance that a link's anchor tells its target's topic
# --scale: the share of a run's URLs at levels 0 to 4 (the rest at level 5), and of URLs that found a resource
SCALE_LEVELS = (0.0001, 0.002, 0.02, 0.1, 0.3)
FOUND_SHARE = 0.02
SCALE_RUN = "bench-scale"


def generate(spec: WebSpec, root: Path = ROOT) -> dict:
    """Writes the topical web (reused while spec and generator are unchanged); returns its manifest."""
    web = web_dir(spec, root)
    manifest = reusable(spec, web, GENERATOR)
    if manifest is not None:
        return manifest
    rng = random.Random(spec.seed)
    kml_files = 0
    geo_pages = 0
    for host in range(spec.hosts):
        count = spec.pages_of(host)
        fanout = tree_fanout(count)
        geo = [False] * count
        for index in range(1, count):
            geo[index] = rng.random() < GEO_CHILD[geo[(index - 1) // fanout]]
        geo_pages += sum(geo)
        host_dir = web / f"h{host}"
        for index in range(count):
            targets = list(range(index * fanout + 1, min(count, index * fanout + fanout + 1)))
            targets += [rng.randrange(count) for _ in range(rng.randint(4, 8))]
            items = []
            for target in targets:
                honest = rng.random() < HONEST_ANCHOR[geo[target]]
                anchors = GEO_ANCHORS if geo[target] == honest else OTHER_ANCHORS
                items.append(f'<li><a href="{page_path(target)}">{rng.choice(anchors)}</a></li>')
            if geo[index]:
                for k in range(rng.randint(1, 2)):
                    name = f"{rng.choice(KML_NAMES)}-{index}-{k}"
                    (host_dir / "files").mkdir(parents=True, exist_ok=True)
                    x, y = rng.uniform(-180, 180), rng.uniform(-85, 85)
                    (host_dir / "files" / f"{name}.kml").write_text(KML.format(name=name, x=x, y=y))
                    items.append(f'<li><a href="/files/{name}.kml">{name.split("-")[0].title()}</a></li>')
                    kml_files += 1
            rng.shuffle(items)
            path = host_dir / ("index.html" if index == 0 else page_path(index).lstrip("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"<!DOCTYPE html><html><body><ul>{''.join(items)}</ul></body></html>\n")
    manifest = {"spec": asdict(spec), "generator": GENERATOR, "pages": spec.pages, "geo_pages": geo_pages,
                "kml_files": kml_files}  # fmt: skip
    (web / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def crawl(spec: WebSpec, budget: float) -> dict:
    settings = Settings.from_env(
        max_level=MAX_LEVEL,
        link_budget=budget,
        allowed_hosts=frozenset(spec.netlocs()),
        per_host_concurrency=2,
    )
    started = time.perf_counter()
    with open(os.devnull, "w") as out:
        report = asyncio.run(crawl_to_jsonl(spec.seeds(), settings, ["KML"], out))
    return {
        "budget": budget,
        "resources": report.resources,
        "urls": report.urls,
        "requests": report.requests,
        "seconds": round(time.perf_counter() - started, 1),
        "curve": report.recall.summary(),
    }


def scorer_speed(links: int = 200_000) -> float:
    """Links scored per second (anchor and URL of a typical page link)."""
    scorer = LinkScorer.default()
    rng = random.Random(1)
    sample = [(f"http://127.0.0.1:18200{page_path(rng.randrange(1, 9999))}", rng.choice(GEO_ANCHORS + OTHER_ANCHORS))
              for _ in range(1000)]  # fmt: skip
    started = time.perf_counter()
    for i in range(links):
        url, anchor = sample[i % 1000]
        scorer.score(url, anchor, 2)
    return links / (time.perf_counter() - started)


def markdown(manifest: dict, runs: list[dict], speed: float) -> str:
    full = runs[0]
    figures = full["curve"]
    curve = dict(
        zip(figures["percent"], zip(figures["scored"], figures["baseline"], strict=True), strict=True)
    )
    rows = [
        f"Web: {manifest['pages']:,} pages ({manifest['geo_pages']:,} about geodata), {manifest['kml_files']:,} "
        f"KML files; full crawl: {full['resources']:,} KML found, {full['urls']:,} URLs fetched.",
        "",
        "| links followed per level | 10 % | 25 % | 50 % | 75 % |",
        "|---|---:|---:|---:|---:|",
        "| recall, best score first (curve) | "
        + " | ".join(f"{curve[p][0]:.3f}" for p in (10, 25, 50, 75))
        + " |",
        "| recall, random order (curve) | "
        + " | ".join(f"{curve[p][1]:.3f}" for p in (10, 25, 50, 75))
        + " |",
        "",
        "| crawl | KML found | recall | URLs fetched | requests | seconds |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        recall = run["resources"] / full["resources"] if full["resources"] else 0.0
        rows.append(
            f"| budget {run['budget']:.2f} | {run['resources']:,} | {recall:.3f} | {run['urls']:,} | "
            f"{run['requests']:,} | {run['seconds']} |"
        )
    rows += ["", f"Scorer: {speed:,.0f} links scored per second."]
    return "\n".join(rows)


def synthetic_run(links: int, seed: int = 1) -> tuple[list[RecordedLink], list[str]]:
    """A run's records: ``links`` URLs over 6 levels, each linked from a random page of the level above, with
    scores in steps of 0.01 (many ties); a resource found on 2 % of the URLs."""
    rng = random.Random(seed)
    sizes = [max(1, int(links * share)) for share in SCALE_LEVELS]
    sizes.append(links - sum(sizes))
    recorded: list[RecordedLink] = []
    above: list[str | None] = [None]
    for level, size in enumerate(sizes):
        urls = [f"http://h{rng.randrange(500)}.example/{level}/{i}" for i in range(size)]
        recorded += [
            RecordedLink(url, level, rng.choice(above), round(rng.random() - DEPTH_WEIGHT * level, 2))
            for url in urls
        ]
        above = urls
    return recorded, [link.url for link in rng.sample(recorded, int(links * FOUND_SHARE))]


def measured(call: Callable[[], object]) -> tuple[object, float, float]:
    """(result, seconds, peak MiB of Python allocations): timed alone, then traced in a second call."""
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    call()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, seconds, peak


def load_run(dsn: str, links: list[RecordedLink], found_on: list[str]) -> None:
    """The run's frontier and resources into the database, by COPY."""
    null = "\\N"  # COPY's NULL
    with closing(psycopg2.connect(dsn)) as conn, conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO crawl_runs (run_id, status) VALUES (%s, 'running') RETURNING run_key", (SCALE_RUN,)
        )
        run_key = cur.fetchone()[0]
        frontier = io.StringIO(
            "".join(f"{run_key}\t{x.url}\t{x.level}\t0\t{x.source or null}\t{x.score}\n" for x in links)
        )
        cur.copy_expert("COPY frontier (run_key, url, level, shard, source_page, score) FROM STDIN", frontier)
        cur.execute("CREATE TEMP TABLE found (n serial, url text)")
        cur.copy_expert("COPY found (url) FROM STDIN", io.StringIO("".join(f"{url}\n" for url in found_on)))
        cur.execute("INSERT INTO resources (url, type) SELECT 'http://found.example/' || n, 'KML' FROM found")
        cur.execute(
            "INSERT INTO run_resources (run_id, resource_id, level, discovered_at, found_on) "
            "SELECT %s, r.id, 0, now(), found.url FROM found JOIN resources r ON r.url = 'http://found.example/' || n",
            (SCALE_RUN,),
        )
    with closing(psycopg2.connect(dsn)) as conn:
        conn.autocommit = True
        conn.cursor().execute("VACUUM ANALYZE")


def scale(links: int) -> str:
    """The recall curve of a synthetic run of ``links`` URLs, in process and in PostgreSQL, and the budget of
    its largest level: seconds and peak Python memory of each, as Markdown."""
    recorded, found_on = synthetic_run(links)
    curve, python_s, python_mib = measured(lambda: recall_curve(recorded, found_on))
    largest = max(link.level for link in recorded)
    with stack_postgres.scratch_database("geoweb_bench") as dsn, Store(dsn) as store:
        store.migrate()
        started = time.perf_counter()
        load_run(dsn, recorded, found_on)
        load_s = time.perf_counter() - started
        in_db, db_s, db_mib = measured(lambda: store.runs.recall_curve(SCALE_RUN))
        _, budget_s, budget_mib = measured(
            lambda: store.frontier.skip_over_budget(SCALE_RUN, largest, 0.5, float("-inf"))
        )
    assert in_db == curve, "the database's curve differs from the in-process one"
    return "\n".join([
        f"{links:,} URLs, {len(found_on):,} resources (loaded by COPY in {load_s:.1f} s); recall at 50 %: "
        f"{curve.at(50)[0]:.3f} by score, {curve.at(50)[1]:.3f} at random (both paths equal).",
        "",
        "| computation | seconds | peak Python memory (MiB) |",
        "|---|---:|---:|",
        f"| `recall_curve` in process | {python_s:.1f} | {python_mib:.0f} |",
        f"| `Runs.recall_curve` from the database | {db_s:.1f} | {db_mib:.1f} |",
        f"| `Frontier.skip_over_budget`, level {largest} | {budget_s:.1f} | {budget_mib:.1f} |",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1,600 pages: a smoke run")
    parser.add_argument("--budgets", type=float, nargs="*", default=[0.5, 0.25])
    parser.add_argument("--scale", type=int, metavar="N", help="only the recall curve of a run of N URLs")
    args = parser.parse_args()
    if args.scale:
        print(scale(args.scale))
        return
    spec = WebSpec(pages=1_600 if args.quick else 8_000, hosts=8, port=18260)
    manifest = generate(spec)
    start_nginx(spec, ROOT)
    try:
        runs = [crawl(spec, budget) for budget in (1.0, *args.budgets)]
    finally:
        stop_nginx(ROOT)
    speed = scorer_speed()
    text = markdown(manifest, runs, speed)
    print(text)
    (ROOT / "priority.json").write_text(
        json.dumps({"manifest": manifest, "runs": runs, "scorer_links_per_s": speed})
    )
    print(f"\nfigures: {ROOT / 'priority.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
