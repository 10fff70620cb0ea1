"""The link budget and the recall curve in the harvest, on real PostGIS: the budget holds per level across
shards, a redone level skips the same URLs, shards fetch best score first, the database orders and budgets a
level as the library does, and the run's curve (computed in the database) is the one the in-process crawl
computes."""

from __future__ import annotations

import asyncio
import io
import json
import math
import random
import uuid
from contextlib import closing

import psycopg2
import pytest
from psycopg2.extras import execute_values

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.harvest.crawl import crawl_shard, finish_run, plan_level, start_run
from geoweb.harvest.params import MAX_LEVEL, HarvestParams
from geoweb.links.priority import apply_budget, recall_curve
from geoweb.models import Link, Page, RecordedLink
from geoweb.store import Store, shard_of
from tests.harvest.web import LoopbackWeb

SHARDS = 8
HOSTS = [f"http://h{i}.example" for i in range(6)]
SEED = "http://seed.example/"
# 48 links at level 1 over 6 hosts, scores all distinct: 0.00, 0.01, ... 0.47
LINKS = [Link(f"{HOSTS[i % 6]}/p{i}", SEED, round(i / 100, 2)) for i in range(48)]


def level_rows(dsn: str, run_id: str, level: int) -> dict[str, tuple]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT url, status, error_reason, score FROM frontier_urls WHERE run_id = %s AND level = %s",
            (run_id, level),
        )
        return {url: tuple(rest) for url, *rest in cur.fetchall()}


def skipped(rows: dict[str, tuple]) -> set[str]:
    return {url for url, (status, reason, _) in rows.items() if (status, reason) == ("skipped", "budget")}


@pytest.fixture
def planned(postgis_dsn):
    """A run whose seed page was fetched and linked 48 scored URLs over 6 hosts (several shards)."""
    run_id = f"budget-{uuid.uuid4().hex[:8]}"
    params = HarvestParams.from_conf({"seeds": [SEED], "shards": SHARDS, "link_budget": 0.25})
    with Store(postgis_dsn) as store:
        start_run(store, run_id, params)
        store.frontier.commit_pages(run_id, [Page(SEED, None, 0, links=list(LINKS))], SHARDS)
        yield store, run_id, params


def test_the_budget_holds_per_level_across_shards(postgis_dsn, planned):
    store, run_id, params = planned
    assert len({shard_of(host, SHARDS) for host in HOSTS}) > 2
    shards = plan_level(store, run_id, 1, params)
    rows = level_rows(postgis_dsn, run_id, 1)
    kept = {url for url, (status, _, _) in rows.items() if status == "discovered"}
    assert kept == {link.url for link in LINKS if link.score >= 0.36}  # the top 12 of 48 (25 %)
    assert len(skipped(rows)) == 36
    assert shards == sorted({shard_of(url.rsplit("/", 1)[0], SHARDS) for url in kept})
    # each shard's pending URLs come best score first
    for shard in shards:
        scores = [score for _, _, _, score in store.frontier.pending_urls(run_id, 1, shard)]
        assert scores == sorted(scores, reverse=True) and scores


def test_a_redone_level_skips_the_same_urls(postgis_dsn, planned):
    store, run_id, params = planned
    plan_level(store, run_id, 1, params)
    first = level_rows(postgis_dsn, run_id, 1)
    # half of the level is crawled (one kept URL fetched, one failed), then the plan is redone
    fetched, failed = sorted(url for url, (status, _, _) in first.items() if status == "discovered")[:2]
    store.frontier.commit_pages(run_id, [Page(fetched, SEED, 1)], SHARDS)
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "UPDATE frontier SET status = 'error' WHERE geoweb_url_hash(url) = geoweb_url_hash(%s) "
            "AND run_key = (SELECT run_key FROM crawl_runs WHERE run_id = %s)",
            (failed, run_id),
        )
    plan_level(store, run_id, 1, params)
    plan_level(store, run_id, 1, params)
    again = level_rows(postgis_dsn, run_id, 1)
    assert skipped(again) == skipped(first)
    assert {again[fetched][0], again[failed][0]} == {"fetched", "error"}


def test_a_minimum_score_skips_the_rest_and_the_seeds_are_never_cut(postgis_dsn, planned):
    store, run_id, _ = planned
    params = HarvestParams.from_conf({"seeds": [SEED], "shards": SHARDS, "link_min_score": 0.4})
    plan_level(store, run_id, 0, params)
    assert level_rows(postgis_dsn, run_id, 0)[SEED][:2] == ("fetched", None)  # its score 0 is below 0.4
    plan_level(store, run_id, 1, params)
    rows = level_rows(postgis_dsn, run_id, 1)
    assert len(skipped(rows)) == 40 and all(rows[url][2] < 0.4 for url in skipped(rows))


def test_the_database_budgets_a_level_in_the_order_of_the_library(postgis_dsn):
    """Many equal scores and non-ASCII URLs: ties fall to the same pseudo-random order in SQL and Python."""
    rng = random.Random(3)
    links = [
        Link(f"http://h{i % 5}.example/d\u00e9p\u00f4t/{i}", SEED, rng.choice([0.0, 0.1, 0.25]))
        for i in range(400)
    ]
    run_id = f"ties-{uuid.uuid4().hex[:8]}"
    params = HarvestParams.from_conf({"seeds": [SEED], "shards": SHARDS})
    with Store(postgis_dsn) as store:
        start_run(store, run_id, params)
        store.frontier.commit_pages(run_id, [Page(SEED, None, 0, links=links)], SHARDS)
        rows = level_rows(postgis_dsn, run_id, 1)
        for fraction, min_score in ((0.3, -math.inf), (0.5, 0.05), (0.01, -math.inf)):
            _, dropped = apply_budget(
                [Link(url, SEED, score) for url, (*_, score) in rows.items()], fraction, min_score
            )
            with store.conn, store.conn.cursor() as cur:  # the level as planned afresh
                cur.execute(
                    "UPDATE frontier SET status = 'discovered', error_reason = NULL "
                    "WHERE run_key = (SELECT run_key FROM crawl_runs WHERE run_id = %s)",
                    (run_id,),
                )
            assert store.frontier.skip_over_budget(run_id, 1, fraction, min_score) == len(dropped)
            assert skipped(level_rows(postgis_dsn, run_id, 1)) == {link.url for link in dropped}


def record_run(dsn: str, run_id: str, links: list[RecordedLink], found_on: list[str]) -> None:
    """A run's frontier and resources as written, whatever they hold (each resource found on ``found_on``)."""
    with closing(psycopg2.connect(dsn)) as conn, conn, conn.cursor() as cur:
        cur.execute("INSERT INTO crawl_runs (run_id, status) VALUES (%s, 'running')", (run_id,))
        execute_values(
            cur,
            "INSERT INTO frontier (run_key, url, level, shard, source_page, score) "
            "SELECT run_key, url, level, 0, source, score "
            "FROM (VALUES %s) AS v(run_id, url, level, source, score) JOIN crawl_runs USING (run_id)",
            [(run_id, link.url, link.level, link.source, link.score) for link in links],
        )
        ids = execute_values(
            cur, "INSERT INTO resources (url, type) VALUES %s RETURNING id",
            [(f"http://{run_id}/{i}", "WMS") for i in range(len(found_on))], fetch=True,
        )  # fmt: skip
        execute_values(
            cur,
            "INSERT INTO run_resources (run_id, resource_id, level, discovered_at, found_on) VALUES %s",
            [(run_id, id_, 0, "2026-01-01", url) for (id_,), url in zip(ids, found_on, strict=True)],
        )


def random_run(rng: random.Random) -> tuple[list[RecordedLink], list[str]]:
    """Up to 5 levels of links with many equal scores and non-ASCII URLs, mostly linked from the level above;
    some from no page, a page never recorded, a page of the same level or deeper, and seeds with a source."""
    urls = [(f"http://h{rng.randrange(3)}.example/{level}/\u00fc{i}", level)
            for level in range(rng.randint(1, 5)) for i in range(rng.randint(1, 30))]  # fmt: skip
    links = []
    for url, level in urls:
        above = [u for u, lvl in urls if lvl == level - 1]
        source = (
            rng.choice(above)
            if above and rng.random() < 0.85
            else rng.choice([None, "http://gone/", rng.choice(urls)[0]])
        )
        links.append(RecordedLink(url, level, source, rng.choice([0.0, 0.05, 0.3, round(rng.random(), 4)])))
    found_on = [rng.choice(urls)[0] for _ in range(rng.randint(0, 40))] + [
        "http://search.example/"
    ] * rng.randint(0, 2)
    return links, found_on


def test_the_database_computes_the_curve_of_the_library(postgis_dsn):
    """The curve computed in PostgreSQL equals the in-process one, on consistent and inconsistent records."""
    rng = random.Random(11)
    with Store(postgis_dsn) as store:
        for _ in range(30):
            links, found_on = random_run(rng)
            run_id = f"sqlcurve-{uuid.uuid4().hex[:8]}"
            record_run(postgis_dsn, run_id, links, found_on)
            assert store.runs.recall_curve(run_id) == recall_curve(links, found_on)
        empty = f"sqlcurve-{uuid.uuid4().hex[:8]}"
        record_run(postgis_dsn, empty, [], [])
        assert store.runs.recall_curve(empty) == recall_curve([], [])


@pytest.fixture(scope="module")
def web():
    with LoopbackWeb() as loopback:
        yield loopback


def test_the_run_summary_holds_the_curve_of_the_in_process_crawl(postgis_dsn, web):
    """The same web, the same budget: the harvest follows the links the in-process crawl follows, and its
    summary's recall curve (from the frontier) is the one the crawl computed from its pages."""
    # a crawl of its own: one named after the seeds could meet the states of another run on the same ports
    conf = {"seeds": [web.url("A"), web.url("B")], "allowed_hosts": web.allowed_hosts, "max_level": 2,
            "shards": 4, "link_budget": 0.5, "crawl": f"curve-{uuid.uuid4().hex[:8]}"}  # fmt: skip
    params = HarvestParams.from_conf(conf)
    out = io.StringIO()
    report = asyncio.run(crawl_to_jsonl(list(params.seeds), params.settings(), params.types, out))
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    run_id = f"curve-{uuid.uuid4().hex[:8]}"
    with Store(postgis_dsn) as store:
        start_run(store, run_id, params)
        for level in range(MAX_LEVEL + 1):
            for shard in plan_level(store, run_id, level, params):
                crawl_shard(store, run_id, level, shard, params)
        summary = finish_run(store, run_id)
        exported = list(store.resources.export(run_id))
    assert {(r["url"], r["type"]) for r in exported} == {(r["url"], r["type"]) for r in records}
    assert report.stats["budget/dropped"] > 0
    assert summary["recall"] == report.recall.summary()
    assert summary["recall"]["resources"] == len(records)
    with psycopg2.connect(postgis_dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT report_png FROM crawl_runs WHERE run_id = %s", (run_id,))
        assert bytes(cur.fetchone()[0]).startswith(b"\x89PNG")
