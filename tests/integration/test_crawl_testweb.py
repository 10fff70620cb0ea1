"""`geoweb crawl` on the local GeoWeb, measured against its ground truth: recall, precision, levels, robots.

One crawl per module (about 10 s, most of it the slow decoy page); each test checks one property of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytestmark = pytest.mark.testweb

MAX_LEVEL = 5
USER_AGENT = "GeoWebHarvester"


@dataclass
class Crawl:
    records: list[dict]
    requests: list  # conftest.Request: what the crawler asked the test web's servers
    stderr: str
    seconds: float

    @property
    def found(self) -> set[tuple[str, str]]:
        return {(r["url"], r["type"]) for r in self.records}


@pytest.fixture(scope="module")
def crawl(testweb, access_logs, tmp_path_factory) -> Crawl:
    out = tmp_path_factory.mktemp("crawl") / "resources.jsonl"
    seeds = [arg for seed in testweb["seeds"] for arg in ("--seed", seed)]
    command = [str(Path(sys.executable).with_name("geoweb")), "crawl", *seeds, "--max-level", str(MAX_LEVEL)]
    command += ["--allow-host", "127.0.0.1", "--output", str(out)]
    mark = access_logs.mark()
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - started
    assert done.returncode == 0, f"geoweb crawl exited {done.returncode}:\n{done.stderr[-3000:]}"
    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    requests = [r for r in access_logs.since(mark) if USER_AGENT in r.user_agent]
    return Crawl(records, requests, done.stderr, seconds)


def planted(manifest: dict, *vias: str) -> dict[tuple[str, str], dict]:
    """(url, type) -> resource, for resources found the given ways within the crawl's reach."""
    return {
        (r["url"], r["type"]): r
        for r in manifest["resources"]
        if r["via"] in vias and r["level"] <= MAX_LEVEL
    }


def describe(resources) -> str:
    return "\n".join(
        f"  {r['type']:9} {r['url']}  (level {r['level']}, from {r['source_page']})" for r in resources
    )


def test_recall_of_linked_resources_is_one(testweb, crawl):
    expected = planted(testweb, "links")
    missing = [expected[key] for key in sorted(set(expected) - crawl.found)]
    assert not missing, f"{len(missing)} of {len(expected)} linked resources not found:\n{describe(missing)}"


def test_precision_is_one(testweb, crawl):
    """Everything reported is planted and reachable: no decoy, nothing robots.txt excludes, nothing too deep."""
    allowed = planted(testweb, "links", "catalogue")
    wrong = [r for r in crawl.records if (r["url"], r["type"]) not in allowed]
    truth = {(r["url"], r["type"]): r for r in testweb["resources"]}
    lines = [
        f"  {r['type']:9} {r['url']}  (from {r['source_page']}; ground truth: "
        f"{truth.get((r['url'], r['type']), {}).get('via', 'not planted')})"
        for r in wrong
    ]
    assert not wrong, f"{len(wrong)} of {len(crawl.records)} reported resources are wrong:\n" + "\n".join(
        lines
    )


def test_each_resource_is_reported_once(crawl):
    repeated = [key for key, n in Counter((r["url"], r["type"]) for r in crawl.records).items() if n > 1]
    assert not repeated, repeated


def test_levels_are_the_link_hops_from_the_seeds(testweb, crawl):
    expected = planted(testweb, "links")
    wrong = [
        f"  {r['type']:9} {r['url']}: level {r['level']}, planted at {expected[(r['url'], r['type'])]['level']}"
        for r in crawl.records
        if (r["url"], r["type"]) in expected and r["level"] != expected[(r["url"], r["type"])]["level"]
    ]
    assert not wrong, "\n".join(wrong)


def test_services_known_only_to_the_catalogue_are_not_reached_by_links(testweb, crawl):
    """Links alone cannot reach them (the paper's deep web): the catalogue harvest's job, not the crawl's."""
    hidden = planted(testweb, "catalogue")
    assert hidden
    assert not set(hidden) & crawl.found


def test_datasets_of_each_resource_are_listed(testweb, crawl):
    truth = planted(testweb, "links", "catalogue")
    short = []
    for record in crawl.records:
        expected = truth.get((record["url"], record["type"]))
        if expected is None:
            continue
        if record["type"] == "CSW":  # its records are counted, and listed as its datasets (all 17 here)
            names = {d.get("name") for d in record["dataset_list"]}
            if record["extra"]["records"] != len(expected["datasets"]) or names != set(expected["datasets"]):
                short.append(
                    f"  CSW       {record['url']}: {record['extra']['records']} records, {sorted(names)}"
                )
            continue
        names = {(d.get("name") or "").rpartition(":")[2] for d in record["dataset_list"]}
        if record["datasets"] != len(record["dataset_list"]) or not set(expected["datasets"]) <= names:
            short.append(
                f"  {record['type']:9} {record['url']}: {sorted(names)} lacks {expected['datasets']}"
            )
    assert not short, "\n".join(short)


def test_nothing_robots_txt_disallows_is_ever_requested(testweb, crawl):
    assert crawl.requests, "no request of the crawler in the servers' access logs"
    forbidden = [
        r.url for r in crawl.requests if any(r.url.startswith(p) for p in testweb["robots_disallowed"])
    ]
    assert not forbidden, forbidden


def test_the_crawl_delay_of_robots_txt_is_obeyed(testweb, crawl):
    """Pages and files of a site asking for a Crawl-delay are requested at least that far apart."""
    assert testweb["crawl_delays"]
    for origin, delay in testweb["crawl_delays"].items():
        port = int(origin.rpartition(":")[2])
        times = sorted(r.millis for r in crawl.requests if r.port == port and r.target != "/robots.txt")
        gaps = [(b - a) / 1000 for a, b in pairwise(times)]
        assert len(times) >= 3 and min(gaps) >= delay * 0.95, f"{origin}: gaps {gaps} below {delay} s"


def test_the_calendar_trap_ends_at_the_level_limit(testweb, crawl):
    (trap,) = [d["url"] for d in testweb["decoys"] if "calendar" in d["why"]]
    trap_path = urlsplit(trap).path.rsplit("/", 2)[0]
    pages = {r.target for r in crawl.requests if r.target.startswith(trap_path)}
    assert 0 < len(pages) <= MAX_LEVEL, sorted(pages)


def test_requests_per_resource(testweb, crawl, capsys):
    """Prints what the crawl cost, counted from the servers' own access logs."""
    per_server = Counter(testweb["servers"][f"http://127.0.0.1:{r.port}"] for r in crawl.requests)
    per_port = Counter(r.port for r in crawl.requests)
    with capsys.disabled():
        print(f"\ncrawl: {crawl.seconds:.1f} s, {len(crawl.records)} resources, {len(crawl.requests)} requests "
              f"({len(crawl.requests) / max(len(crawl.records), 1):.1f} per resource)")  # fmt: skip
        print("requests per server: " + ", ".join(f"{k} {v}" for k, v in per_server.most_common()))
        print("requests per port:   " + ", ".join(f"{k} {v}" for k, v in sorted(per_port.items())))
        print(crawl.stderr[crawl.stderr.find("level  URLs") :].rstrip())
    assert len(crawl.requests) >= len(crawl.records)


def test_files_are_titled_from_their_content(testweb, crawl):
    """A KML document's name, a shapefile's metadata record, GDAL's layer folder: the title the file itself
    carries; none for a file that carries none (never its file name: GeoHub shows that as the last resort)."""
    truth = {key: r for key, r in planted(testweb, "links").items() if "title" in r}
    assert any(r["title"] for r in truth.values()), (
        "the manifest records no file titles: rebuild the test web"
    )
    assert any(r["title"] is None for r in truth.values())
    wrong = [
        f"  {record['type']:9} {record['url']}: {record['title']!r}, planted {truth[key]['title']!r}"
        for record in crawl.records
        if (key := (record["url"], record["type"])) in truth and record["title"] != truth[key]["title"]
    ]
    assert not wrong, "\n".join(wrong)
    titled = {key for key, r in truth.items() if r["title"]}
    assert titled <= crawl.found  # each titled file found, so none passes unread
