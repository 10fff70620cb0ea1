"""What topical link priority buys on a synthetic web with topics: recall of KML files under a link budget.

The web (written here, served by nginx with ``synthetic_web``'s server) is a tree per host, as in
``synthetic_web``, plus random links, where each page is about geodata or about something else. A geodata page
links mostly to geodata pages and to one or two KML files; other pages mostly to other pages. Anchors tell
the topic of the page they lead to, but not always: 20 % of the links to geodata pages carry a neutral anchor
and 10 % of the others a geodata one. Page URLs say nothing; KML URLs end in ``.kml``.

One full crawl gives the recall curve (by score and by a random order); crawls under budgets of 25 % and 50 %
give what a budget really finds and fetches. Prints a Markdown table; writes the figures to var/bench/.

    .venv/bin/python bench/bench_priority.py            # 8,000 pages over 8 hosts
    .venv/bin/python bench/bench_priority.py --quick    # 1,600 pages
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from synthetic_web import (
    DEFAULT_ROOT,
    MAX_LEVEL,
    WebSpec,
    page_path,
    start_nginx,
    stop_nginx,
    tree_fanout,
    web_dir,
)

from geoweb.cli import run_crawl
from geoweb.links.priority import LinkScorer
from geoweb.settings import Settings

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


def generate(spec: WebSpec, root: Path = ROOT) -> dict:
    """Writes the topical web (reused while spec and generator are unchanged); returns its manifest."""
    web = web_dir(spec, root)
    manifest_file = web / "manifest.json"
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        if manifest.get("spec") == asdict(spec) and manifest.get("generator") == GENERATOR:
            return manifest
    if web.exists():
        shutil.rmtree(web)
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
    manifest_file.write_text(json.dumps(manifest, indent=1))
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
        report = asyncio.run(run_crawl(spec.seeds(), settings, ["KML"], out))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1,600 pages: a smoke run")
    parser.add_argument("--budgets", type=float, nargs="*", default=[0.5, 0.25])
    args = parser.parse_args()
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
