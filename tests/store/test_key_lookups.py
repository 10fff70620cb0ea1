"""Lookups by URL key probe the key index, one lookup a URL, even for a run or a crawl begun since the tables
were last analysed: the statistics expect one row of it, and a plan made for one row reads every row of the
run or crawl, each batch of a crawl task (``frontier.PLANNED_KEY``)."""

from __future__ import annotations

import json
import uuid

from psycopg2.extras import execute_values

from geoweb.crawl.pagestates import PageState
from geoweb.models import URLStatus
from geoweb.store.frontier import _PENDING_DEEPER, SHALLOWER, SHALLOWER_VALUES, url_hash
from geoweb.store.pagestates import BRIEFS, LOAD

ROWS = 3000  # of the run or crawl the statistics do not know
ASKED = 20


def scans_of(plan: dict, table: str) -> list[dict]:
    """The plan's nodes that look rows of ``table`` up, but by their row's address (an update's)."""
    kind = plan["Node Type"]
    found = (
        [plan] if plan.get("Relation Name") == table and kind.endswith("Scan") and kind != "Tid Scan" else []
    )
    for child in plan.get("Plans", []):
        found.extend(scans_of(child, table))
    return found


def explained(cur, statement: str, args=None) -> dict:
    cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", args)
    return cur.fetchone()[0][0]["Plan"]


def assert_probes(plan: dict, table: str) -> None:
    scans = scans_of(plan, table)
    assert scans, json.dumps(plan, indent=1)
    for scan in scans:
        assert "md5" in scan.get("Index Cond", ""), json.dumps(scan, indent=1)  # the URL's key, in the index
        read = (scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0)) * scan["Actual Loops"]
        assert read <= ASKED, json.dumps(scan, indent=1)


def analyse_another_run(store) -> None:
    """The frontier's statistics taken with ``ROWS`` rows of another run: they know nothing of the test's."""
    earlier = f"test-{uuid.uuid4().hex[:12]}"
    store.runs.begin(earlier, {"seeds": ["http://seed.example/"]})
    store.frontier.add_urls(
        earlier, 1, [(f"http://{earlier}.example/p{i}", None, None) for i in range(ROWS)], 8
    )
    with store.conn, store.conn.cursor() as cur:
        cur.execute("ANALYZE frontier")


def test_states_of_a_crawl_the_statistics_do_not_know_are_read_by_key(store):
    known, new = f"known-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}"
    urls = [f"http://{new}.example/p{i}.html" for i in range(ROWS)]
    store.page_states.save(known, {f"http://{known}.example/p{i}.html": PageState() for i in range(ROWS)})
    with store.conn, store.conn.cursor() as cur:
        cur.execute("ANALYZE page_states")
    store.page_states.save(new, {url: PageState(level=1) for url in urls})

    asked = urls[:ASKED]
    with store.conn, store.conn.cursor() as cur:
        for statement in (LOAD, BRIEFS):
            assert_probes(explained(cur, statement, ([url_hash(u) for u in asked], new)), "page_states")
    assert set(store.page_states.load(new, [*asked, "http://elsewhere.example/"])) == set(asked)


def test_links_of_a_run_the_statistics_do_not_know_are_matched_by_key(store, run_id):
    analyse_another_run(store)
    urls = [f"http://{run_id}.example/p{i}" for i in range(ROWS)]
    store.frontier.add_urls(run_id, 3, [(url, None, None) for url in urls], 8)

    with store.conn.cursor() as cur:
        cur.execute("SELECT run_key FROM crawl_runs WHERE run_id = %s", (run_id,))
        statement = SHALLOWER.format(run_key=cur.fetchone()[0])
        links = [(url_hash(url), 2, None, "http://seed.example/", 0.5) for url in sorted(urls[:ASKED])]
        values = b",".join(cur.mogrify(SHALLOWER_VALUES, link) for link in links).decode()
        assert_probes(explained(cur, statement.replace("VALUES %s", f"VALUES {values}")), "frontier")
        store.conn.rollback()  # EXPLAIN ANALYZE ran the update
        execute_values(cur, statement, links, template=SHALLOWER_VALUES)
        cur.execute(
            "SELECT count(*) FROM frontier_urls WHERE run_id = %s AND level = 2 AND source_page IS NOT NULL",
            (run_id,),
        )
        assert cur.fetchone()[0] == ASKED
        store.conn.rollback()


def test_a_shards_urls_of_a_run_the_statistics_do_not_know_find_their_sources_by_key(store, run_id):
    """The page that linked each URL a shard reads is looked up by its key, URL by URL: a join planned without
    the run's statistics hashed the whole frontier for every read of a task running ahead."""
    analyse_another_run(store)
    seed = f"http://{run_id}.example/"
    store.frontier.add_urls(run_id, 0, [(seed, None, None)], 1)
    store.frontier.add_urls(run_id, 1, [(f"{seed}p{i}", None, None) for i in range(ROWS)], 1)
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "UPDATE frontier SET source_hash = geoweb_url_hash(%s) WHERE level = 1 "
            "AND run_key = (SELECT run_key FROM crawl_runs WHERE run_id = %s)",
            (seed, run_id),
        )
        args = {"run_id": run_id, "shard": 0, "level": 0, "deepest": 1, "status": URLStatus.DISCOVERED,
                "min_score": 0.0}  # fmt: skip
        plan = explained(cur, _PENDING_DEEPER, args)
    lookups = [scan for scan in scans_of(plan, "frontier") if scan.get("Alias") != "f"]
    assert lookups and "Hash" not in json.dumps(plan), json.dumps(plan, indent=1)
    for scan in lookups:
        assert "md5" in scan.get("Index Cond", ""), json.dumps(scan, indent=1)
        assert scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) <= 1, json.dumps(scan, indent=1)
    rows = store.frontier.pending_deeper(run_id, 0, 0, 1, 0.0)
    assert len(rows) == ROWS and {source for _, _, source, _, _ in rows} == {seed}


def test_urls_gone_leave_the_crawls_states_and_nothing_else_does(store):
    crawl, other = f"gone-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    urls = [f"http://{crawl}.example/p{i}.html" for i in range(3)]
    store.page_states.save(crawl, {url: PageState() for url in urls})
    store.page_states.save(other, {urls[0]: PageState()})

    store.page_states.save(crawl, {urls[1]: PageState(level=2)}, gone=[urls[0]])

    kept = store.page_states.load(crawl, urls)
    assert set(kept) == set(urls[1:]) and kept[urls[1]].level == 2
    assert set(store.page_states.load(other, urls)) == {urls[0]}  # another crawl's state of the URL stays
