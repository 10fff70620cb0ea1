"""A crawl that carries forward through the crawl DAG's steps: the second run of the same crawl asks with the
validators the first kept in PostGIS, carries over what did not change unread (its resources confirmed by
the run), reads what changed, and a full recrawl reads everything again."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid

from aiohttp import web

from geoweb.crawl.pagestates import UNREACHED_SECONDS, PageState
from geoweb.harvest.params import HarvestParams
from geoweb.store import Store
from tests.data import corpus
from tests.harvest.test_set_aside import harvest
from tests.hostile.servers import PagesServer

KML = """<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>{}</name>
<Placemark><name>A</name><Point><coordinates>10.0,50.0</coordinates></Point></Placemark></Document></kml>"""


class ValidatingServer(PagesServer):
    """Its pages with an ETag each, answering 304 to a request that names it; the conditional headers of
    every request are recorded."""

    def __init__(self, pages):
        super().__init__(pages)
        self.conditional: list[tuple[str, str | None]] = []

    async def _page(self, request: web.Request) -> web.Response:
        if request.path not in self.pages or request.path == "/robots.txt":
            return await super()._page(request)
        self.seen.append(request.path_qs)
        content_type, body = self.pages[request.path]
        etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
        self.conditional.append((request.path, request.headers.get("If-None-Match")))
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=body, headers={"Content-Type": content_type, "ETag": etag})


def run_resources(store: Store, run_id: str) -> dict[str, str]:
    with store.transaction() as cur:
        cur.execute(
            "SELECT r.url, r.title FROM run_resources rr JOIN crawl_runs c USING (run_id) "
            "JOIN resources r ON r.id = rr.resource_id WHERE rr.run_id = %s",
            (run_id,),
        )
        return {url.rsplit("/", 1)[1]: title for url, title in cur.fetchall()}


def test_a_second_run_of_a_crawl_asks_with_its_validators_and_carries_over_what_did_not_change(postgis_dsn):
    pages = {
        "/": ("text/html", b'<html><body><a href="/maps.html">maps</a> <a href="/b.kml">b</a></body></html>'),
        "/maps.html": ("text/html", b'<html><body><a href="/a.kml">a</a></body></html>'),
        "/a.kml": ("application/vnd.google-earth.kml+xml", KML.format("Parks").encode()),
        "/b.kml": ("application/vnd.google-earth.kml+xml", KML.format("Rivers").encode()),
    }
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 2, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        params = HarvestParams.from_conf(conf)
        first_id, first = harvest(store, params)
        first_requests = len(site.seen)  # robots.txt once per task included
        assert all(sent is None for _, sent in site.conditional)
        assert store.page_states.count(params.crawl) == 4

        site.conditional.clear()
        pages["/b.kml"] = ("application/vnd.google-earth.kml+xml", KML.format("Rivers and canals").encode())
        second_id, second = harvest(store, params)
        second_requests = len(site.seen) - first_requests
        asked = dict(site.conditional)
        assert set(asked) == set(pages) and all(asked.values())  # every URL asked with its ETag
        assert run_resources(store, second_id) == {"a.kml": "Parks", "b.kml": "Rivers and canals"}
        assert run_resources(store, first_id) == {"a.kml": "Parks", "b.kml": "Rivers and canals"}
        assert second["urls"] == first["urls"] == 4  # a 304 is a visit: the levels count it
        # the run's costs: every request the server saw; the second read only the changed b.kml, saving the rest
        unchanged_bytes = sum(len(pages[path][1]) for path in ("/", "/maps.html", "/a.kml"))
        assert first["costs"] == {"requests": first_requests, "bytes_read": first["costs"]["bytes_read"],
                                  "new_pages": 4, "changed_pages": 0, "gone_pages": 0, "not_modified": 0,
                                  "same_bytes": 0, "not_due": 0, "bytes_saved": 0}  # fmt: skip
        assert first["costs"]["bytes_read"] >= unchanged_bytes
        assert second["costs"] == {"requests": second_requests, "bytes_read": len(pages["/b.kml"][1]),
                                   "new_pages": 0, "changed_pages": 1, "gone_pages": 0, "not_modified": 3,
                                   "same_bytes": 0, "not_due": 0, "bytes_saved": unchanged_bytes}  # fmt: skip
        # the crawl's runs side by side, as the report's cost panel plots them
        assert store.runs.crawl_costs(second_id) == [(first_id, first["costs"]), (second_id, second["costs"])]
        assert store.runs.crawl_costs(first_id) == [(first_id, first["costs"])]
        assert store.runs.report_png(second_id).startswith(b"\x89PNG")

        # a revisit budget of one page: the run asks the one whose revisit is worth most, carries the rest over
        site.conditional.clear()
        budget_id, budgeted = harvest(store, HarvestParams.from_conf(conf | {"revisit_budget": 1}))
        assert len(site.conditional) == 1 and budgeted["costs"]["not_due"] == 3
        assert run_resources(store, budget_id) == {"a.kml": "Parks", "b.kml": "Rivers and canals"}
        assert budgeted["urls"] == 4  # a page carried over unasked is a visit of the run all the same

        site.conditional.clear()
        harvest(store, HarvestParams.from_conf(conf | {"full_recrawl": True}))
        assert [sent for _, sent in site.conditional] == [None] * 4


def test_pages_carried_over_unasked_are_carried_in_sql_to_the_frontier_a_read_gives(postgis_dsn):
    """Two hosts' pages, each URL linked first from one page (others link back up). With a revisit budget of
    0, the second run carries every page over unasked: those without resources in SQL, from the links the
    crawl kept as admitted, the KML through the engine. Its frontier (levels, shards, sources, scores) is
    the first run's, its level figures and resources too, and no page is requested."""
    with PagesServer({}) as a, PagesServer({}) as b:

        def page(*links: str) -> tuple[str, bytes]:
            return "text/html", ("<html><body>" + "".join(f'<a href="{u}">{u}</a>' for u in links)).encode()

        a.pages.update({
            "/": page("/a1", "/a2", b.url("/b1")), "/a1": page("/a11", "/a12", "/"), "/a2": page("/a21", "/a1"),
            "/a11": page("/a111"), "/a12": page("/a.kml"), "/a21": page(), "/a111": page("/"),
            "/a.kml": ("application/vnd.google-earth.kml+xml", KML.format("Parks").encode()),
        })  # fmt: skip
        b.pages.update({
            "/b1": page("/b11", "/b12", a.url("/")), "/b11": page("/b111", a.url("/a1")), "/b12": page(),
            "/b111": page(),
        })  # fmt: skip
        conf = {"seeds": [a.url("/")], "allowed_hosts": [a.hostport, b.hostport], "max_level": 3, "shards": 4,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        with Store(postgis_dsn) as store:
            first_id, first = harvest(store, HarvestParams.from_conf(conf))
            first_frontier = frontier(store, first_id)  # the next run to end deletes it
            a.seen.clear(), b.seen.clear()
            tasks: list[dict] = []
            second_id, second = harvest(store, HarvestParams.from_conf(conf | {"revisit_budget": 0}), tasks)
            carried = sum(task.get("carried_in_sql", 0) for task in tasks)
            assert carried == 11 and first["urls"] == second["urls"] == 12
            assert [p for p in a.seen + b.seen if p != "/robots.txt"] == []
            assert frontier(store, second_id) == first_frontier
            assert [(s["level"], s["urls"]) for s in second["levels"]] == [
                (s["level"], s["urls"]) for s in first["levels"]
            ]
            assert second["costs"]["not_due"] == 12 and second["costs"]["requests"] == 0
            assert run_resources(store, second_id) == run_resources(store, first_id) == {"a.kml": "Parks"}


def test_pages_asked_again_and_unchanged_give_the_links_their_states_keep_as_admitted(postgis_dsn):
    """A page that answers 304 gives the links the crawl admitted from it when they were kept at its level
    under this run's admission, not scored again: its crawl task writes them in SQL from its state. Kept
    under another admission, they are scored anew, committed and kept so. The kept scores are set apart from
    the scorer's to tell the two."""
    pages = index_and_six_pages()
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        first_id, _ = harvest(store, HarvestParams.from_conf(conf))
        scored = {url: score for url, _, _, _, score, _, _ in frontier(store, first_id)}

        def keep_admitted(by: str | None = None) -> None:
            with store.transaction() as cur:
                cur.execute(
                    "UPDATE page_states SET state = jsonb_set(jsonb_set(state, '{admitted,links}', (SELECT "
                    "jsonb_agg(jsonb_build_array(link->0, 0.375)) FROM jsonb_array_elements(state->'admitted'->"
                    "'links') link)), '{admitted,by}', coalesce(to_jsonb(%s::text), state->'admitted'->'by')) "
                    "WHERE crawl = %s AND url = %s",
                    (by, conf["crawl"], site.url("/")),
                )

        def link_scores(run_id: str) -> dict[str, float]:
            return {url: score for url, level, _, _, score, _, _ in frontier(store, run_id) if level == 1}

        keep_admitted()
        tasks: list[dict] = []
        second_id, second = harvest(store, HarvestParams.from_conf(conf), tasks)
        assert second["costs"]["not_modified"] == 7 and second["urls"] == 7
        assert set(link_scores(second_id).values()) == {0.375}
        # the index's links; the other pages are at max_level, their links not followed
        assert sum(task.get("links_in_sql", 0) for task in tasks) == 1
        keep_admitted(by="another admission")
        tasks.clear()
        third_id, _ = harvest(store, HarvestParams.from_conf(conf), tasks)
        assert sum(task.get("links_in_sql", 0) for task in tasks) == 0
        assert link_scores(third_id) == {url: scored[url] for url in link_scores(third_id)} != {}
        assert 0.375 not in link_scores(third_id).values()
        kept = store.page_states.load(conf["crawl"], [site.url("/")])[site.url("/")].admitted
        assert kept["by"] != "another admission" and len(kept["links"]) == 6


def test_damaged_kept_states_are_logged_and_their_pages_read_as_new_the_others_carried_over(
    postgis_dsn, caplog
):
    """A state damaged in the table does not stop a run: it is logged, its page read whole as a new one and its
    state written anew, and the other pages are carried over as before. Admitted links that do not read fail
    the carry in SQL; a scalar that does not cast fails the brief reads and the revisit cutoff, which then
    read the states whole."""
    pages = index_and_six_pages()
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}", "revisit_budget": 0}  # fmt: skip

        def damage(path: str, state: str) -> None:
            with store.transaction() as cur:
                cur.execute(
                    f"UPDATE page_states SET state = {state} WHERE crawl = %s AND url = %s",
                    (conf["crawl"], site.url(path)),
                )

        def run_again() -> tuple[str, dict]:
            site.conditional.clear()
            caplog.clear()
            return harvest(store, HarvestParams.from_conf(conf))

        harvest(store, HarvestParams.from_conf(conf))
        caplog.set_level(logging.WARNING)
        damage("/", "jsonb_set(state, '{admitted,links,0,1}', '\"high\"')")
        second_id, second = run_again()
        assert site.conditional == [("/", None)]
        assert second["urls"] == 7 and second["costs"]["not_due"] == 6
        assert "the kept links of 1 pages do not read" in caplog.text
        assert f"the kept state of {site.url('/')} is damaged (admitted links" in caplog.text
        assert {url for url, level, *_ in frontier(store, second_id) if level == 1} == {
            site.url(f"/p{i}.html") for i in range(6)
        }
        kept = store.page_states.load(conf["crawl"], [site.url("/")])[site.url("/")]
        assert {type(score) for _, score in kept.admitted["links"]} == {float}

        damage("/p0.html", "jsonb_set(state, '{visits}', '\"many\"')")
        _, third = run_again()
        assert site.conditional == [("/p0.html", None)]
        assert third["urls"] == 7 and third["costs"]["not_due"] == 6
        assert "a kept state does not read brief" in caplog.text
        assert f"the kept state of {site.url('/p0.html')} is damaged ('visits' is 'many')" in caplog.text
        assert store.page_states.load(conf["crawl"], [site.url("/p0.html")])[site.url("/p0.html")].visits == 0


def frontier(store: Store, run_id: str) -> set[tuple]:
    with store.transaction() as cur:
        cur.execute(
            "SELECT url, level, shard, source_page, score, status, keyword FROM frontier_urls WHERE run_id = %s",
            (run_id,),
        )
        return set(cur.fetchall())


def index_and_six_pages() -> dict[str, tuple[str, bytes]]:
    """An index (156 bytes) linking six pages (32 bytes each)."""
    pages = {
        "/": ("text/html", b"<html><body>" + b"".join(b'<a href="/p%d.html">p</a>' % i for i in range(6)))
    }
    return pages | {f"/p{i}.html": ("text/html", b"<html><body>page %d</body></html>" % i) for i in range(6)}


def test_a_revisit_budget_holds_in_the_run_after_the_first(postgis_dsn):
    """After one run every page was read once, so their revisits are worth the same (the most, and the
    largest float) and the cutoff's key ties on it: the key kept in the database must still compare as drawn,
    so that the run asks the budget's pages and carries over the others."""
    pages = index_and_six_pages()
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        harvest(store, HarvestParams.from_conf(conf))
        site.conditional.clear()
        _, second = harvest(store, HarvestParams.from_conf(conf | {"revisit_budget": 3}))
        assert len(site.conditional) == 3 and all(sent for _, sent in site.conditional)
        assert second["costs"]["not_due"] == 4 and second["urls"] == 7


def test_a_time_budget_asks_again_as_many_pages_as_the_last_run_asked_in_that_time(postgis_dsn, caplog):
    """A time budget is a revisit budget too: the requests the crawl's last run sent per second of its wall
    time, times the budget, go to the known pages likeliest to have changed; the others are carried over."""
    pages = index_and_six_pages()
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        first_id, _ = harvest(store, HarvestParams.from_conf(conf))
        with store.transaction() as cur:  # the first run took 70 s
            cur.execute(
                "UPDATE crawl_runs SET started_at = finished_at - interval '70 seconds' WHERE run_id = %s",
                (first_id,),
            )
        requests = store.runs.costs(first_id)["requests"]
        seconds = 3.5 * 70 / requests  # 3.5 of the first run's requests, well past the second run's wall time
        site.conditional.clear()
        caplog.set_level(logging.INFO, logger="geoweb.harvest")
        _, second = harvest(store, HarvestParams.from_conf(conf | {"time_budget_hours": seconds / 3600}))
        assert len(site.conditional) == 3 and all(sent for _, sent in site.conditional)
        assert second["costs"]["not_due"] == 4 and second["urls"] == 7
        assert "revisit budget of 3 pages" in caplog.text


def test_a_revisit_budget_in_megabytes_asks_the_pages_whose_last_reads_fit_in_it(postgis_dsn):
    """The index (156 bytes) and its pages (32 bytes each) were read once: equal in worth, the index first by
    its level. 220 bytes take the index and two pages; with a budget of two pages as well, the index and one
    page; 0 bytes none. Each budget is the second run of a crawl of its own."""
    pages = index_and_six_pages()
    assert len(pages["/"][1]) == 156 and {len(body) for path, (_, body) in pages.items() if path != "/"} == {
        32
    }
    budgets = [({"revisit_megabytes": 0.00022}, 3), ({"revisit_megabytes": 0.00022, "revisit_budget": 2}, 2),
               ({"revisit_megabytes": 0}, 0)]  # fmt: skip
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        for budget, asked in budgets:
            conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1, "shards": 2,
                    "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
            harvest(store, HarvestParams.from_conf(conf))
            site.conditional.clear()
            _, run = harvest(store, HarvestParams.from_conf(conf | budget))
            assert len(site.conditional) == asked and all(sent for _, sent in site.conditional), budget
            assert ("/" in dict(site.conditional)) == (asked > 0)
            assert run["costs"]["not_due"] == 7 - asked and run["urls"] == 7


def test_a_run_whose_time_budget_is_spent_carries_over_what_its_crawl_knows_and_defers_the_rest(postgis_dsn):
    """Spent as the run begins, a time budget leaves every shard without a request: the pages the crawl read
    before are carried over with their resources, and a seed new to it is deferred to the next run."""
    pages = {
        "/": ("text/html", b'<html><body><a href="/maps.html">maps</a></body></html>'),
        "/maps.html": ("text/html", b'<html><body><a href="/a.kml">a</a></body></html>'),
        "/a.kml": ("application/vnd.google-earth.kml+xml", KML.format("Parks").encode()),
        "/new.html": ("text/html", b'<html><body><a href="/b.kml">b</a></body></html>'),
        "/b.kml": ("application/vnd.google-earth.kml+xml", KML.format("Rivers").encode()),
    }
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 2, "shards": 2,
                "crawl": f"test-{uuid.uuid4().hex[:8]}"}  # fmt: skip
        harvest(store, HarvestParams.from_conf(conf))
        conf["seeds"].append(site.url("/new.html"))
        site.seen.clear()
        spent_id, spent = harvest(store, HarvestParams.from_conf(conf | {"time_budget_hours": 1e-12}))
        assert site.seen == [] and spent["costs"]["requests"] == 0
        assert spent["costs"]["not_due"] == 3 and run_resources(store, spent_id) == {"a.kml": "Parks"}
        with store.transaction() as cur:
            cur.execute("SELECT url, status, error_reason, error_message FROM frontier_urls "
                        "WHERE run_id = %s AND status <> %s", (spent_id, "fetched"))  # fmt: skip
            assert cur.fetchall() == [(site.url("/new.html"), "deferred", "run_time_budget",
                                       "not fetched: new to the crawl when the run's time budget was spent")]  # fmt: skip
        assert spent["deferred_by_reason"] == {"run_time_budget": 1}

        next_id, _ = harvest(store, HarvestParams.from_conf(conf))
        assert run_resources(store, next_id) == {"a.kml": "Parks", "b.kml": "Rivers"}


def test_a_304_to_a_services_capabilities_is_a_measured_check_of_the_run(postgis_dsn):
    """A WMS whose capabilities answer 304 in the second run: that run's check row is the 304 (unchanged, its
    timing), as the first run's is the read; the quality figures count both."""
    capabilities = (corpus.CAPABILITIES / "wms_mesonet-caps-130.xml").read_bytes()
    pages = {
        "/": ("text/html", b'<html><body><a href="/wms?service=WMS&amp;request=GetCapabilities">wms</a></body></html>'),
        "/wms": ("text/xml", capabilities),
    }  # fmt: skip
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        params = HarvestParams.from_conf({
            "seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 1,
            "crawl": f"test-{uuid.uuid4().hex[:8]}", "types": ["WMS"],
        })  # fmt: skip
        first_id, _ = harvest(store, params)
        second_id, second = harvest(store, params)
        assert second["costs"]["not_modified"] == 2
        with store.transaction() as cur:
            cur.execute(
                "SELECT c.run_id, c.operation, c.outcome, c.http_status, c.bytes, c.first_byte_seconds > 0, "
                "c.total_seconds >= c.first_byte_seconds, c.content_sha256 = r.content_sha256 "
                "FROM resource_checks c JOIN resources r ON r.id = c.resource_id "
                "WHERE r.url = %s AND r.type = 'WMS' ORDER BY c.id",
                (site.url("/wms"),),
            )
            checks = cur.fetchall()
            cur.execute(
                "SELECT q.checks_30d, q.availability_30d_percent FROM resource_quality q "
                "JOIN resources r ON r.id = q.resource_id WHERE r.url = %s",
                (site.url("/wms"),),
            )
            quality = cur.fetchone()
    assert checks == [
        (first_id, "GetCapabilities", "unchanged", 200, len(capabilities), True, True, True),
        (second_id, "GetCapabilities", "unchanged", 304, 0, True, True, True),
    ]
    assert quality == (2, 100)


def test_runs_of_the_same_seeds_are_one_crawl_and_other_seeds_another():
    one = HarvestParams.from_conf({"seeds": ["https://a.example/", "https://b.example/"]})
    same = HarvestParams.from_conf({"seeds": ["https://b.example/", "https://a.example/"], "max_level": 2})
    other = HarvestParams.from_conf({"seeds": ["https://c.example/"]})
    assert one.crawl_name() == same.crawl_name() != other.crawl_name()
    assert (
        HarvestParams.from_conf({"seeds": ["https://c.example/"], "crawl": "weekly"}).crawl_name() == "weekly"
    )


def test_a_run_forgets_what_no_run_reached_for_four_weeks(postgis_dsn):
    """A page the crawl's runs no longer reach leaves its schedule when the next run begins; a page reached
    lately, or another crawl's, stays."""
    pages = {"/": ("text/html", b"<html><body>a page</body></html>")}
    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        name = f"test-{uuid.uuid4().hex[:8]}"
        params = HarvestParams.from_conf(
            {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 0, "crawl": name}
        )
        store.page_states.save(name, {site.url("/old"): PageState(), site.url("/"): PageState()})
        store.page_states.save("another", {site.url("/old"): PageState()})
        with store.transaction() as cur:
            cur.execute(
                "UPDATE page_states SET updated_at = now() - make_interval(secs => %s) WHERE url = %s",
                (UNREACHED_SECONDS + 60, site.url("/old")),
            )
        harvest(store, params)
        assert store.page_states.count(name) == 1 and store.page_states.load(name, [site.url("/")])
        assert store.page_states.count("another") == 1


def test_a_run_that_ends_deletes_the_frontier_past_the_seeds_of_its_crawls_earlier_runs(postgis_dsn):
    """A crawl's frontier does not grow by a run's URLs each week: when a run ends, its crawl's earlier runs
    keep only their seeds and their stored reports; another crawl's run keeps all of its rows."""
    pages = {
        "/": ("text/html", b'<html><body><a href="/maps.html">maps</a></body></html>'),
        "/maps.html": ("text/html", b'<html><body><a href="/a.kml">a</a></body></html>'),
        "/a.kml": ("application/vnd.google-earth.kml+xml", KML.format("Parks").encode()),
    }

    def rows_by_level(run_id: str) -> dict[int, int]:
        with store.transaction() as cur:
            cur.execute(
                "SELECT level, count(*) FROM frontier_urls WHERE run_id = %s GROUP BY level", (run_id,)
            )
            return dict(cur.fetchall())

    def stored_summary(run_id: str) -> dict:
        with store.transaction() as cur:
            cur.execute("SELECT summary FROM crawl_runs WHERE run_id = %s", (run_id,))
            return cur.fetchone()[0]

    with ValidatingServer(pages) as site, Store(postgis_dsn) as store:
        conf = {"seeds": [site.url("/")], "allowed_hosts": [site.hostport], "max_level": 2}
        params = HarvestParams.from_conf(conf | {"crawl": f"test-{uuid.uuid4().hex[:8]}"})
        first_id, first = harvest(store, params)
        other_id, _ = harvest(
            store, HarvestParams.from_conf(conf | {"crawl": f"test-{uuid.uuid4().hex[:8]}"})
        )
        assert rows_by_level(first_id) == rows_by_level(other_id) == {0: 1, 1: 1, 2: 1}

        second_id, second = harvest(store, params)
        assert rows_by_level(first_id) == {0: 1}
        assert rows_by_level(second_id) == rows_by_level(other_id) == {0: 1, 1: 1, 2: 1}
        assert stored_summary(first_id) == json.loads(json.dumps(first))  # its report, as it ended
        assert run_resources(store, first_id) == run_resources(store, second_id) == {"a.kml": "Parks"}
        assert site.url("/") in store.runs.validated_seeds(first_id[:4])

        harvest(store, params)
        assert rows_by_level(first_id) == rows_by_level(second_id) == {0: 1}
        assert stored_summary(second_id) == json.loads(json.dumps(second))
