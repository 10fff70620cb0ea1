from urllib.parse import urlsplit, urlunsplit

import pytest

from geoweb.errors import HTTPStatusError, RobotsDisallowed
from geoweb.models import LevelStats, Page, RunStatus
from geoweb.store import Store, StoreError
from tests.store.pages import kml, page, wms
from tests.store.queries import rows


def test_a_run_begins_resumes_and_ends(store, run_id):
    (started,) = rows(store, "SELECT started_at FROM crawl_runs WHERE run_id = %s", run_id)[0]
    store.runs.end(run_id, RunStatus.FAILED, {"error": "worker lost"})
    store.runs.begin(run_id, {"seeds": ["http://seed.example/"], "resumed": True})
    status, params, resumed_start, finished = rows(
        store, "SELECT status, params, started_at, finished_at FROM crawl_runs WHERE run_id = %s", run_id
    )[0]
    assert (status, params["resumed"], resumed_start, finished) == ("running", True, started, None)
    png = b"\x89PNG\r\n\x1a\n\x00binary"
    store.runs.end(run_id, RunStatus.SUCCESS, {"resources": 19, "note": "nul\x00here"}, report_png=png)
    status, summary, stored_png, finished = rows(
        store, "SELECT status, summary, report_png, finished_at FROM crawl_runs WHERE run_id = %s", run_id
    )[0]
    assert (status, summary, bytes(stored_png)) == ("success", {"resources": 19, "note": "nulhere"}, png)
    assert finished >= started
    assert store.runs.report_png(run_id) == png
    assert store.runs.report_png("never-begun") is None


def test_latest_run_is_the_last_begun(store, run_id):
    assert store.runs.latest() == run_id
    store.runs.begin(f"{run_id}-later", {})
    assert store.runs.latest() == f"{run_id}-later"


def test_ending_an_unknown_run_says_so(store):
    with pytest.raises(StoreError, match="unknown run 'never-begun'"):
        store.runs.end("never-begun", RunStatus.SUCCESS, {})


def test_level_stats_count_committed_pages_once_when_a_shard_is_redone(store, run_id, site):
    seed = f"{site}/"
    store.frontier.add_urls(run_id, 0, [(seed, None, None)], 2)
    level_1 = [f"{site}/{i}" for i in range(6)]
    store.frontier.commit_pages(run_id, [page(seed, 0, links=level_1)], 2)
    store.runs.save_level_stats(run_id, 0, 0, LevelStats(0, urls=1, seconds=0.25))
    # a shard commits half its level, dies before saving its statistics, and is redone for the other half
    store.frontier.commit_pages(run_id, [
        page(level_1[0], 1, seed, [wms(site, 1, seed)]),
        page(level_1[1], 1, seed, error=HTTPStatusError(500, url=level_1[1])),
        page(level_1[2], 1, seed, error=RobotsDisallowed(url=level_1[2])),
    ], 2)  # fmt: skip
    store.frontier.commit_pages(
        run_id, [page(level_1[3], 1, seed, [kml(site, 1, seed)]), page(level_1[4], 1, seed)], 2
    )
    store.runs.save_level_stats(run_id, 1, 0, LevelStats(1, urls=2, resources=1, seconds=1.5))
    store.runs.save_level_stats(run_id, 1, 1, LevelStats(1, urls=0, seconds=2.5))
    assert store.runs.level_stats(run_id) == [
        LevelStats(0, urls=1, resources=0, failures=0, seconds=0.25),
        LevelStats(1, urls=4, resources=2, failures=1, seconds=2.5),  # robots.txt refusals are not fetches
    ]
    assert store.runs.level_stats("no-such-run") == []


def test_from_env_names_the_missing_setting():
    with pytest.raises(StoreError, match="GEOWEB_DB is not set"):
        Store.from_env({})
    with pytest.raises(StoreError, match="GEOWEB_DB is not set"):
        Store.from_env({"GEOWEB_DB": "  "})


def test_from_env_connects(postgis_dsn):
    with Store.from_env({"GEOWEB_DB": postgis_dsn}) as store:
        assert store.migrate() == []


def test_a_wrong_database_is_a_clear_error_that_keeps_the_password_out(postgis_dsn):
    parts = urlsplit(postgis_dsn)
    wrong = parts._replace(
        netloc=f"{parts.username}:s3cret-pass@{parts.hostname}:{parts.port}", path="/no_such_db"
    )
    with pytest.raises(StoreError, match="cannot connect") as refused:
        Store(urlunsplit(wrong))
    assert "s3cret-pass" not in str(refused.value)
    with pytest.raises(StoreError, match="cannot connect") as unreachable:
        Store("postgresql://geoweb:s3cret-pass@127.0.0.1:1/geoweb")
    assert "s3cret-pass" not in str(unreachable.value)


def test_deferred_pages_are_kept_with_their_reason_counted_and_their_hosts_set_aside(store, run_id, site):
    seed, other = f"{site}/", "http://tarpit.example.org"
    store.frontier.add_urls(run_id, 0, [(seed, None, None)], 2)
    level_1 = [f"{site}/a", f"{other}/1", f"{other}/2", f"{other}/3"]
    store.frontier.commit_pages(run_id, [page(seed, 0, links=level_1)], 2)
    store.frontier.commit_pages(
        run_id,
        [page(level_1[0], 1, seed), page(level_1[1], 1, seed, error=HTTPStatusError(503, url=level_1[1]))],
        2,
    )
    deferred = [Page(url, seed, 1, deferred="host_failures") for url in level_1[2:]]
    store.frontier.commit_pages(run_id, deferred, 2)
    status = rows(
        store, "SELECT url, status, error_reason FROM frontier_urls WHERE run_id = %s AND level = 1", run_id
    )
    assert {url: (state, reason) for url, state, reason in status} == {
        f"{site}/a": ("fetched", None),
        f"{other}/1": ("error", HTTPStatusError(503, url="x").reason),
        f"{other}/2": ("deferred", "host_failures"),
        f"{other}/3": ("deferred", "host_failures"),
    }
    (level_1_stats,) = [s for s in store.runs.level_stats(run_id) if s.level == 1]
    assert (
        level_1_stats.urls,
        level_1_stats.failures,
        level_1_stats.deferred,
        level_1_stats.deferred_hosts,
    ) == (2, 1, 2, 1)
    assert store.frontier.set_aside(run_id) == {other: "host_failures"}
    # the crawl's own limits defer a URL without setting its host aside
    crawls_own = [Page(f"{site}/b", seed, 1, deferred="memory_budget"), Page(f"{site}/c", seed, 1,
                  deferred="run_time_budget")]  # fmt: skip
    store.frontier.commit_pages(run_id, crawls_own, 2)
    assert store.frontier.set_aside(run_id) == {other: "host_failures"}
    assert [
        *store.frontier.pending_urls(run_id, 1, 0),
        *store.frontier.pending_urls(run_id, 1, 1),
    ] == []  # nothing left to fetch
