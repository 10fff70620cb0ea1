"""The harvest steps on real PostGIS over a loopback web of two hosts: the sharded, committed crawl finds what a
plain in-process crawl finds, redoing any step changes nothing, and a shard killed half-way resumes with no URL
lost or duplicated."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import uuid
from collections import Counter

import psycopg2
import pytest

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.harvest.crawl import crawl_shard, finish_run, plan_level, start_run
from geoweb.harvest.pagebuffer import COMMIT_PAGES
from geoweb.harvest.params import MAX_LEVEL, HarvestParams
from geoweb.store import Store, shard_of
from geoweb.store.frontier import Frontier
from tests.harvest.web import LIST_SIZE, LoopbackWeb

MAX_HOPS = 2
TABLES = ("frontier", "run_resources", "resources", "datasets", "crawl_levels", "crawl_runs")


class WorkerDied(Exception):
    """Raised by ``DyingStore``: the worker process is gone from here on."""


class DyingFrontier(Frontier):
    """A real frontier whose worker dies at a commit: after ``commits_left`` batches, the next never reaches
    the database (as when a Celery worker is killed in the middle of a shard)."""

    commits_left = 0

    def commit_pages(self, *args, **kwargs) -> None:
        if self.commits_left == 0:
            raise WorkerDied("killed in the middle of a shard")
        self.commits_left -= 1
        super().commit_pages(*args, **kwargs)


class DyingStore(Store):
    """A real store whose frontier dies after ``commits`` commits."""

    def __init__(self, dsn: str, commits: int):
        super().__init__(dsn)
        self.frontier = DyingFrontier(self.conn)
        self.frontier.commits_left = commits


@pytest.fixture(scope="module")
def web():
    with LoopbackWeb() as loopback:
        yield loopback


@pytest.fixture(scope="module")
def params(web) -> HarvestParams:
    """Both hosts as seeds, in two different shards."""
    origins = [web.url(host).rstrip("/") for host in ("A", "B")]
    shards = next(n for n in range(2, 64) if len({shard_of(o, n) for o in origins}) == 2)
    return HarvestParams.from_conf(
        {"seeds": [web.url("A"), web.url("B")], "allowed_hosts": web.allowed_hosts, "max_level": MAX_HOPS,
         "shards": shards}
    )  # fmt: skip


@pytest.fixture(scope="module")
def reference(web, params):
    """A plain in-process crawl of the same web with the same settings: its records and report."""
    out = io.StringIO()
    report = asyncio.run(crawl_to_jsonl(list(params.seeds), params.settings(), params.types, out))
    return [json.loads(line) for line in out.getvalue().splitlines()], report


def harvest(store: Store, run_id: str, params: HarvestParams) -> None:
    """The DAG's steps in its order, every level's shards one after the other."""
    start_run(store, run_id, params)
    for level in range(MAX_LEVEL + 1):
        for shard in plan_level(store, run_id, level, params):
            crawl_shard(store, run_id, level, shard, params)
    finish_run(store, run_id)


@pytest.fixture(scope="module")
def harvested(postgis_dsn, web, params, reference):
    """A harvest run done with the steps: its run id and the requests it made."""
    run_id = f"harvest-{uuid.uuid4().hex[:8]}"
    before = Counter(web.requests)
    with Store(postgis_dsn) as store:
        harvest(store, run_id, params)
    return run_id, Counter(web.requests) - before


def found(records) -> set[tuple[str, str, int]]:
    return {(r["url"], r["type"], r["level"]) for r in records}


def figures(levels) -> list[tuple[int, int, int, int]]:
    return [(s.level, s.urls, s.resources, s.failures) for s in levels]


def frontier(dsn: str, run_id: str) -> dict[str, tuple]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT url, level, status, error_reason FROM frontier_urls WHERE run_id = %s", (run_id,))
        return {url: tuple(rest) for url, *rest in cur.fetchall()}


def table_rows(dsn: str) -> dict[str, list]:
    """Every row of the harvest tables but the times a redo may touch."""
    queries = {
        "frontier": "SELECT run_id, url, level, shard, status, error_reason FROM frontier_urls",
        "run_resources": "SELECT run_id, resource_id, level, source_page FROM run_resources",
        "resources": "SELECT id, url, type, title, level, source_page FROM resources",
        "datasets": "SELECT id, resource_id, position, name FROM datasets",
        "crawl_levels": "SELECT run_id, level, shard, urls, resources, failures FROM crawl_levels",
        "crawl_runs": "SELECT run_id, status, summary FROM crawl_runs",
    }
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        rows = {}
        for table in TABLES:
            cur.execute(queries[table] + " ORDER BY 1, 2, 3")
            rows[table] = cur.fetchall()
        return rows


def test_harvest_finds_what_a_plain_crawl_finds(postgis_dsn, web, params, reference, harvested):
    records, report = reference
    run_id, requests = harvested
    with Store(postgis_dsn) as store:
        exported = list(store.resources.export(run_id))
        levels = store.runs.level_stats(run_id)
    # the web: the WMS at level 1, 120 + 2 KML files at level 2; deep.kml is 3 hops away
    assert len(found(records)) == 1 + LIST_SIZE + 2
    assert found(exported) == found(records)
    assert len(exported) == len(records)
    by_url = {r["url"]: r for r in exported}
    wms = by_url[web.url("B", "/wms")]
    assert wms["type"] == "WMS" and wms["datasets"] > 0 and wms["bbox"] is not None
    assert figures(levels) == figures(report.levels)
    # every page fetched once, whichever shard met its links first; robots.txt kept the crawl out of /private/
    assert requests, "the harvest fetched nothing"
    assert all(n == 1 for (host, path), n in requests.items() if path != "/robots.txt"), requests
    assert not any(path.startswith("/private/") for _, path in requests)
    refused = frontier(postgis_dsn, run_id)[web.url("A", "/private/x.html")]
    assert refused[1:] == ("skipped", "robots_disallowed")


def test_finish_run_stores_the_report_with_the_run(postgis_dsn, reference, harvested):
    _, report = reference
    run_id, _ = harvested
    with psycopg2.connect(postgis_dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT status, summary, report_png FROM crawl_runs WHERE run_id = %s", (run_id,))
        status, summary, png = cur.fetchone()
    assert status == "success"
    assert bytes(png).startswith(b"\x89PNG\r\n\x1a\n")
    assert [(s["level"], s["urls"], s["resources"]) for s in summary["levels"]] == [
        (s.level, s.urls, s.resources) for s in report.levels
    ]
    assert summary["resources_by_type"] == {"KML": LIST_SIZE + 2, "WMS": 1}


def test_plan_level_is_empty_past_max_level_and_when_done(postgis_dsn, params, harvested):
    run_id, _ = harvested
    with Store(postgis_dsn) as store:
        assert [plan_level(store, run_id, level, params) for level in range(MAX_LEVEL + 1)] == [[]] * 6


def test_redoing_every_step_changes_no_row_and_fetches_nothing(postgis_dsn, web, params, harvested):
    run_id, _ = harvested
    before, requests = table_rows(postgis_dsn), Counter(web.requests)
    with Store(postgis_dsn) as store:
        start_run(store, run_id, params)
        for level in range(MAX_HOPS + 1):
            for shard in range(params.shards):  # every shard, as retried tasks would
                assert crawl_shard(store, run_id, level, shard, params)["pending"] == 0
        finish_run(store, run_id)
    assert table_rows(postgis_dsn) == before
    assert web.requests == requests


@pytest.fixture(scope="module")
def interrupted(postgis_dsn, web, params):
    """A run whose level-2 shard of host A dies after one committed batch, then is run again: the first run
    of a crawl of its own, as the harvested one is."""
    run_id = f"interrupted-{uuid.uuid4().hex[:8]}"
    params = dataclasses.replace(params, crawl=run_id)
    shard_a = shard_of(web.url("A").rstrip("/"), params.shards)
    before = Counter(web.requests)
    with Store(postgis_dsn) as store:
        start_run(store, run_id, params)
        for level in range(MAX_HOPS):
            for shard in plan_level(store, run_id, level, params):
                crawl_shard(store, run_id, level, shard, params)
        assert shard_a in plan_level(store, run_id, MAX_HOPS, params)
    with DyingStore(postgis_dsn, commits=1) as dying, pytest.raises(WorkerDied):
        crawl_shard(dying, run_id, MAX_HOPS, shard_a, params)
    after_crash = frontier(postgis_dsn, run_id)
    with Store(postgis_dsn) as store:
        for shard in plan_level(store, run_id, MAX_HOPS, params):
            crawl_shard(store, run_id, MAX_HOPS, shard, params)
        finish_run(store, run_id)
    return run_id, after_crash, Counter(web.requests) - before


def test_an_interrupted_shard_resumes_with_no_url_lost_or_duplicated(
    postgis_dsn, web, params, harvested, interrupted
):
    reference_run, _ = harvested
    run_id, after_crash, requests = interrupted
    host_a = web.url("A")
    shard_a = [
        url for url, (level, *_) in after_crash.items() if level == MAX_HOPS and url.startswith(host_a)
    ]
    # the crash left one batch committed and the rest of the shard still to do
    assert len([url for url in shard_a if after_crash[url][1] != "discovered"]) == COMMIT_PAGES
    assert len(shard_a) > 2 * COMMIT_PAGES
    # resumed: the same frontier, outcome by outcome, and the same resources as the uninterrupted run
    assert frontier(postgis_dsn, run_id) == frontier(postgis_dsn, reference_run)
    with Store(postgis_dsn) as store:
        assert found(store.resources.export(run_id)) == found(store.resources.export(reference_run))
    # only the batch that died (and what was in flight when it died) was fetched twice
    pages = {page: n for page, n in requests.items() if page[1] != "/robots.txt"}
    twice = [page for page, n in pages.items() if n == 2]
    assert COMMIT_PAGES <= len(twice) <= COMMIT_PAGES + params.per_host_concurrency
    assert max(pages.values()) == 2


def test_level_statistics_survive_an_interrupted_shard(postgis_dsn, harvested, interrupted):
    with Store(postgis_dsn) as store:
        assert figures(store.runs.level_stats(interrupted[0])) == figures(
            store.runs.level_stats(harvested[0])
        )


def test_seeds_are_normalised_once_and_a_dropped_seed_is_logged(postgis_dsn, caplog):
    run_id = f"seeds-{uuid.uuid4().hex[:8]}"
    seeds = ["http://example.org/report.pdf", "HTTP://Example.ORG:80/maps", "http://example.org/maps#top"]
    params = HarvestParams.from_conf({"seeds": seeds, "shards": 4})
    with Store(postgis_dsn) as store:
        assert start_run(store, run_id, params) == 1
        assert start_run(store, run_id, params) == 0  # a retried start adds nothing
        assert plan_level(store, run_id, 0, params) == [shard_of("http://example.org", 4)]
        summary = finish_run(store, run_id)
    assert "seed http://example.org/report.pdf dropped by the URL filters" in caplog.text
    assert frontier(postgis_dsn, run_id) == {"http://example.org/maps": (0, "discovered", None)}
    recall = summary.pop("recall")
    assert set(summary.pop("costs").values()) == {0}  # no task ran
    assert summary == {"levels": [], "urls": 0, "resources": 0, "deferred": 0, "resources_by_type": {},
                       "deferred_by_reason": {}}  # fmt: skip
    assert (recall["resources"], recall["links"], set(recall["scored"])) == (0, 1, {1.0})
