import logging
import math
import threading
import time

import pytest

from geoweb.errors import HTTPStatusError, RobotsDisallowed
from geoweb.models import Dataset, Resource
from geoweb.store import Store
from geoweb.store.clean import MAX_WORDS, SHORT_TEXT
from tests.store.pages import kml, page, wms
from tests.store.queries import rows, scalar


def counts(store: Store, run_id: str, site: str) -> dict[str, int]:
    like = f"{site}/%"
    return {
        "resources": scalar(store, "SELECT count(*) FROM resources WHERE url LIKE %s", like),
        "datasets": scalar(
            store,
            "SELECT count(*) FROM datasets d JOIN resources r ON r.id = d.resource_id WHERE r.url LIKE %s",
            like,
        ),
        "run_resources": scalar(store, "SELECT count(*) FROM run_resources WHERE run_id = %s", run_id),
        "frontier": scalar(store, "SELECT count(*) FROM frontier_urls WHERE run_id = %s", run_id),
    }


def crawl_two_levels(store: Store, run_id: str, site: str) -> None:
    seed = f"{site}/"
    store.frontier.add_urls(run_id, 0, [(seed, None, None)], 4)
    store.frontier.commit_pages(
        run_id, [page(seed, 0, links=[f"{site}/maps", f"{site}/gone", f"{site}/private"])], 4
    )
    store.frontier.commit_pages(
        run_id,
        [
            page(
                f"{site}/maps",
                1,
                seed,
                [wms(site, 1, seed), kml(site, 1, seed)],
                links=[f"{site}/more", seed],
            ),
            page(f"{site}/gone", 1, seed, error=HTTPStatusError(404, url=f"{site}/gone")),
            page(f"{site}/private", 1, seed, error=RobotsDisallowed(url=f"{site}/private")),
        ],
        4,
    )


def test_redoing_pages_never_duplicates_a_row(store, run_id, site, caplog):
    with caplog.at_level(logging.WARNING, logger="geoweb.store"):
        crawl_two_levels(store, run_id, site)
    assert caplog.records == []  # clean input is stored as it is
    first = counts(store, run_id, site)
    assert first == {"resources": 2, "datasets": 4, "run_resources": 2, "frontier": 5}
    crawl_two_levels(store, run_id, site)
    assert counts(store, run_id, site) == first
    assert rows(
        store,
        "SELECT url, level, status, error_reason, error_message FROM frontier_urls WHERE run_id = %s ORDER BY url",
        run_id,
    ) == [
        (f"{site}/", 0, "fetched", None, None),
        (f"{site}/gone", 1, "error", "http_status", "HTTP 404"),
        (f"{site}/maps", 1, "fetched", None, None),
        (f"{site}/more", 2, "discovered", None, None),
        (f"{site}/private", 1, "skipped", "robots_disallowed", "robots.txt disallows this URL"),
    ]
    assert list(
        store.frontier.pending_urls(
            run_id, 2, scalar(store, "SELECT shard FROM frontier_urls WHERE url = %s", f"{site}/more")
        )
    ) == [(f"{site}/more", f"{site}/maps", None, 0.0)]


def test_a_run_links_each_resource_at_the_lowest_level_it_was_found(store, run_id, site):
    store.frontier.commit_pages(
        run_id, [page(f"{site}/deep", 2, f"{site}/b", [wms(site, 2, f"{site}/b")])], 4
    )
    store.frontier.commit_pages(
        run_id, [page(f"{site}/near", 1, f"{site}/a", [wms(site, 1, f"{site}/a")])], 4
    )
    store.frontier.commit_pages(
        run_id, [page(f"{site}/deeper", 3, f"{site}/c", [wms(site, 3, f"{site}/c")])], 4
    )
    assert rows(store, "SELECT level, source_page FROM run_resources WHERE run_id = %s", run_id) == [
        (1, f"{site}/a")
    ]
    # the resource itself remembers where it was first found
    assert rows(store, "SELECT level, source_page FROM resources WHERE url LIKE %s", f"{site}/%") == [
        (2, f"{site}/b")
    ]


def test_a_second_run_shares_the_resource_and_keeps_its_first_sighting(store, run_id, site):
    store.frontier.commit_pages(run_id, [page(f"{site}/a", 1, None, [wms(site)])], 4)
    first_seen, last_seen = rows(
        store, "SELECT first_seen, last_seen FROM resources WHERE url LIKE %s", f"{site}/%"
    )[0]
    store.runs.begin(f"{run_id}-next", {})
    store.frontier.commit_pages(f"{run_id}-next", [page(f"{site}/a", 1, None, [wms(site)])], 4)
    assert scalar(store, "SELECT count(*) FROM resources WHERE url LIKE %s", f"{site}/%") == 1
    seen = rows(store, "SELECT first_seen, last_seen FROM resources WHERE url LIKE %s", f"{site}/%")[0]
    assert seen[0] == first_seen and seen[1] > last_seen
    assert (
        scalar(store, "SELECT count(*) FROM run_resources WHERE run_id IN (%s, %s)", run_id, f"{run_id}-next")
        == 2
    )


def test_the_search_keyword_follows_pages_to_resources_and_links(store, run_id, site):
    store.frontier.add_urls(run_id, 0, [(f"{site}/", None, "rivers")], 4)
    store.frontier.commit_pages(
        run_id, [page(f"{site}/", 0, None, [wms(site, 0)], links=[f"{site}/next"])], 4
    )
    store.frontier.commit_pages(
        run_id, [page(f"{site}/other", 0, None, [kml(site, 0)])], 4, {f"{site}/other": "trails"}
    )
    assert rows(
        store, "SELECT type, keyword FROM resources WHERE url LIKE %s ORDER BY type", f"{site}/%"
    ) == [
        ("KML", "trails"),
        ("WMS", "rivers"),
    ]
    assert rows(store, "SELECT level, keyword FROM frontier_urls WHERE url = %s", f"{site}/next") == [
        (1, "rivers")
    ]


def test_datasets_follow_the_document(store, run_id, site):
    store.frontier.commit_pages(run_id, [page(f"{site}/a", 1, None, [wms(site, layers=3)])], 4)
    ids = rows(
        store,
        "SELECT d.position, d.id FROM datasets d JOIN resources r ON r.id = d.resource_id "
        "WHERE r.url LIKE %s ORDER BY d.position",
        f"{site}/%",
    )
    changed = wms(site, layers=2)
    changed.datasets[1].title = "Renamed"
    store.frontier.commit_pages(run_id, [page(f"{site}/a", 1, None, [changed])], 4)
    assert rows(
        store,
        "SELECT d.position, d.id, d.title FROM datasets d JOIN resources r ON r.id = d.resource_id "
        "WHERE r.url LIKE %s ORDER BY d.position",
        f"{site}/%",
    ) == [
        (0, ids[0][1], "Layer 0"),
        (1, ids[1][1], "Renamed"),
    ]


def test_a_hostile_resource_loads_what_it_can_and_loses_nothing_else(store, run_id, site, caplog):
    hostile = Resource(
        url=f"{site}/hostile/wms",
        type="WMS",
        version="1.3.0\x00",
        title="T" * 10_000_000,
        abstract="abs\x00tract \ud800",
        keywords=["ok", "nul\x00"] + ["k"] * (MAX_WORDS + 10),
        provider="P\x00",
        datasets=[
            Dataset(name="nan", bbox=(math.nan, 0.0, 1.0, 1.0)),
            Dataset(name="inf", bbox=(0.0, -math.inf, 1.0, 1.0)),
            Dataset(name="east", bbox=(170.0, 0.0, 200.0, 10.0)),
            Dataset(name="\x00named", title="x" * 100_000, keywords=["\x00"], extra={"\x00": math.nan}),
        ],
        bbox=(0.0, 0.0, 1e300, math.nan),
        extra={"deep": {"nan": math.nan, "bytes": b"\x00\xff"}},
        discovered_at="not a time",
    )
    unkeyable = Resource(url=f"{site}/" + "x" * 5000, type="WMS", title="too long to be a key")
    with caplog.at_level(logging.WARNING, logger="geoweb.store"):
        store.frontier.commit_pages(
            run_id,
            [
                page(f"{site}/bad", 1, None, [hostile, unkeyable, kml(site)], links=[f"{site}/next"]),
                page(f"{site}/good", 1, None, [wms(site)]),
            ],
            4,
        )
    stored = rows(
        store,
        "SELECT version, length(title), abstract, keywords, provider, bbox IS NULL, extra "
        "FROM resources WHERE url = %s",
        f"{site}/hostile/wms",
    )
    assert stored == [
        (
            "1.3.0",
            SHORT_TEXT,
            "abstract ?",
            ["ok", "nul"] + ["k"] * (MAX_WORDS - 2),
            "P",
            True,
            {"deep": {"nan": None, "bytes": "b'\\x00\\xff'"}},
        )
    ]
    datasets = rows(
        store,
        "SELECT d.name, Box2D(d.footprint)::text, length(d.title), d.keywords, d.extra "
        "FROM datasets d JOIN resources r ON r.id = d.resource_id WHERE r.url = %s "
        "ORDER BY d.position",
        f"{site}/hostile/wms",
    )
    assert datasets == [
        ("nan", None, None, [], {}),
        ("inf", None, None, [], {}),
        ("east", "BOX(170 0,180 10)", None, [], {}),
        ("named", None, SHORT_TEXT, [""], {"": None}),
    ]
    # the others on both pages are there, the unkeyable one is not, and both pages are done
    assert rows(store, "SELECT type FROM resources WHERE url LIKE %s ORDER BY url", f"{site}/%") == [
        ("WMS",),
        ("KML",),
        ("WMS",),
    ]
    assert rows(store, "SELECT status FROM frontier_urls WHERE run_id = %s ORDER BY url", run_id) == [
        ("fetched",),
        ("fetched",),
        ("discovered",),
    ]
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert "too long to be a key" not in messages and "not stored: the key needs" in messages
    for reason in (
        "title: cut to 2000 characters",
        "dataset bbox: bbox skipped: not finite (2x)",
        "dataset bbox: bbox clamped to WGS84",
        "bbox: bbox skipped: not finite",
        "discovered_at: unreadable",
        "abstract: unencodable characters replaced",
    ):
        assert reason in messages


def test_a_hundred_thousand_datasets_load_in_one_commit_and_export(store, run_id, site):
    big = wms(site, layers=100_000)
    started = time.monotonic()
    store.frontier.commit_pages(
        run_id, [page(f"{site}/big", 1, None, [big]), page(f"{site}/small", 1, None, [kml(site)])], 4
    )
    committed = time.monotonic()
    exported = list(store.resources.export(run_id))
    done = time.monotonic()
    assert counts(store, run_id, site)["datasets"] == 100_002
    assert [r["datasets"] for r in exported] == [100_000, 2]
    assert exported[0]["dataset_list"][99_999] == {
        "name": "layer99999", "title": "Layer 99999", "bbox": [120.0 + 99_999 % 20 / 10, 22.0, 122.0, 25.0],
        "keywords": ["water"], "extra": {"styles": ["default"]}, "concepts": [],
    }  # fmt: skip
    print(f"100,000 datasets: commit {committed - started:.1f} s, export {done - committed:.1f} s")
    assert done - started < 60


def test_rows_the_database_refuses_fail_their_page_only(store, run_id, site, caplog):
    store.frontier.add_urls(run_id, 1, [(f"{site}/poison", None, None), (f"{site}/fine", None, None)], 4)
    poison = page(f"{site}/poison", 2**31, None, [kml(site)])  # a level beyond the integer column
    with caplog.at_level(logging.ERROR, logger="geoweb.store"):
        store.frontier.commit_pages(run_id, [poison, page(f"{site}/fine", 1, None, [wms(site)])], 4)
    assert rows(store, "SELECT type FROM resources WHERE url LIKE %s", f"{site}/%") == [("WMS",)]
    (status, reason, message), fine = rows(
        store,
        "SELECT status, error_reason, error_message FROM frontier_urls WHERE run_id = %s ORDER BY url DESC",
        run_id,
    )
    assert (status, reason, fine) == ("error", "store", ("fetched", None, None))
    assert "out of range" in message
    assert any("poison" in r.getMessage() for r in caplog.records)


def test_workers_committing_the_same_resources_at_once_neither_fail_nor_duplicate(postgis_dsn, run_id, site):
    """Two shards finding the same services, with overlapping links, commit side by side."""
    barrier = threading.Barrier(2)
    errors: list[Exception] = []

    def worker(name: str) -> None:
        with Store(postgis_dsn) as store:
            barrier.wait()
            for i in range(20):
                links = [f"{site}/shared/{i}", f"{site}/{name}/{i}"]
                found = [wms(site, layers=50), kml(site)]
                try:
                    store.frontier.commit_pages(
                        run_id, [page(f"{site}/{name}/page{i}", 1, None, found, links=links)], 4
                    )
                except Exception as exc:  # the test asserts there is none
                    errors.append(exc)

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    with Store(postgis_dsn) as store:
        assert counts(store, run_id, site) == {
            "resources": 2, "datasets": 52, "run_resources": 2, "frontier": 40 + 20 + 40,
        }  # fmt: skip


def test_pages_committed_unflushed_are_committed_and_the_setting_ends_with_the_block(
    store, run_id, site, postgis_dsn
):
    def synchronous_commit() -> str:
        return scalar(store, "SHOW synchronous_commit")

    with store.unflushed_commits():
        assert synchronous_commit() == "off"
        store.frontier.commit_pages(run_id, [page(f"{site}/", 0, links=[f"{site}/next"])], 4)
        with Store(postgis_dsn) as other:  # visible to every other session at once: committed
            assert scalar(other, "SELECT count(*) FROM frontier_urls WHERE run_id = %s", run_id) == 2
    assert synchronous_commit() == "on"

    with pytest.raises(ValueError), store.unflushed_commits():
        raise ValueError("a crawl that fails")
    assert synchronous_commit() == "on"
