import logging
import os
import subprocess
import sys
import threading
from collections import Counter

import pytest

from geoweb.crawl.pagestates import PageState
from geoweb.links.normalize import origin
from geoweb.links.priority import by_priority, shuffle_key
from geoweb.models import Link, Page
from geoweb.store import Store, StoreError, shard_of
from geoweb.store.clean import MAX_URL_BYTES
from geoweb.store.frontier import url_hash
from tests.store.queries import rows, scalar

ORIGINS = [f"http://host{i}.example" for i in range(1000)]


def test_shards_are_the_same_in_every_process():
    """Another process, with another string hash seed than this one, puts each origin on the same shard."""
    code = "import sys; from geoweb.store import shard_of; print([shard_of(o, 8) for o in sys.argv[1:]])"
    other = subprocess.run(
        [sys.executable, "-c", code, *ORIGINS[:50]], env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert other.stdout == f"{[shard_of(o, 8) for o in ORIGINS[:50]]}\n"


def test_shards_spread_origins_and_refuse_no_shards():
    counts = Counter(shard_of(o, 8) for o in ORIGINS)
    assert set(counts) == set(range(8))
    assert min(counts.values()) > 1000 / 8 * 0.7
    assert shard_of("http://a.example", 1) == 0
    with pytest.raises(ValueError, match="at least 1"):
        shard_of("http://a.example", 0)


# URLs as the frontier may hold them: normalised, and as a caller could pass them
KEY_URLS = [
    "http://a.example/", "https://b.example:8443/wms?SERVICE=WMS", "http://a.example?x=1", "http://a.example#top",
    "HTTP://Upper.example/Path", "http://user:pw@a.example:81/", "http://[2001:db8::1]:8080/x", "http://a.example",
    "http://例え.jp/河川?q=水", "http://a.example/" + "p" * 2000,
]  # fmt: skip


def test_the_keys_and_origins_python_computes_are_the_databases(store):
    """``url_hash`` and ``links.normalize.origin`` agree with the schema's ``geoweb_url_hash`` and
    ``geoweb_origin``, which index the rows."""
    assert rows(
        store, "SELECT geoweb_url_hash(u), geoweb_origin(u) FROM unnest(%s::text[]) AS u", KEY_URLS
    ) == [(url_hash(url), origin(url)) for url in KEY_URLS]
    assert len({url_hash(url) for url in KEY_URLS}) == len(KEY_URLS)


def test_the_shards_python_computes_are_the_databases(store):
    """``shard_of`` and the schema's ``geoweb_shard`` agree, so links carried over in SQL join their origin's
    shard (``Frontier.carry_over``)."""
    origins = [origin(url) for url in KEY_URLS] + ORIGINS[:50] + [""]
    assert rows(store, "SELECT geoweb_shard(o, 8) FROM unnest(%s::text[]) AS o", origins) == [
        (shard_of(o, 8),) for o in origins
    ]


def test_carrying_pages_over_in_sql_marks_them_fetched_and_writes_their_links_as_a_commit_does(store, run_id):
    """``carry_over``: the pages' rows fetched; their kept links added one level down in their origins'
    shards, or lowering a URL still to fetch deeper (its source and score with it); a URL done, or already
    as shallow, is left as it is; a page past the followed levels gives none. Redone, it changes nothing."""
    page, leaf = "http://a.example/p", "http://a.example/leaf"
    links = [
        "http://b.example/new",
        "http://a.example/deep",
        "http://a.example/done",
        "http://a.example/near",
    ]
    store.frontier.add_urls(run_id, 1, [(page, None, None), (leaf, None, None)], 4)
    store.frontier.add_urls(run_id, 4, [(links[1], "http://a.example/x", None)], 4)
    store.frontier.add_urls(run_id, 2, [(links[3], "http://a.example/y", None)], 4)
    store.frontier.commit_pages(run_id, [Page(links[2], None, 3)], 4)
    crawl = f"crawl-{run_id}"
    admitted = {"level": 1, "by": "test", "links": [[url, 0.5] for url in links]}
    store.page_states.save(crawl, {page: PageState(admitted=admitted), leaf: PageState(admitted=admitted)})
    for _ in range(2):
        store.frontier.carry_over(run_id, crawl, [(page, 1, "lakes", True), (leaf, 1, None, False)], 4)
        assert set(rows(store, "SELECT url, level, shard, source_page, score, status, keyword FROM frontier_urls "
                        "WHERE run_id = %s", run_id)) == {
            (page, 1, shard_of("http://a.example", 4), None, 0.0, "fetched", None),
            (leaf, 1, shard_of("http://a.example", 4), None, 0.0, "fetched", None),
            (links[0], 2, shard_of("http://b.example", 4), page, 0.5, "discovered", "lakes"),
            (links[1], 2, shard_of("http://a.example", 4), page, 0.5, "discovered", None),
            (links[2], 3, shard_of("http://a.example", 4), None, 0.0, "fetched", None),
            (links[3], 2, shard_of("http://a.example", 4), "http://a.example/y", 0.0, "discovered", None),
        }  # fmt: skip
        # nor are their rows locked, as a conflict clause locks every row it meets (its xmax)
        locks = rows(store, "SELECT xmax::text FROM frontier WHERE url = ANY(%s)", links[2:])
        assert locks == [("0",), ("0",)]


def test_add_urls_counts_only_new_urls_and_keeps_the_first_level(store, run_id, site):
    links = [(f"{site}/a", None, "rivers"), (f"{site}/b", None, None), (f"{site}/a", None, "lakes")]
    assert store.frontier.add_urls(run_id, 0, links, shards=4) == 2
    assert (
        store.frontier.add_urls(
            run_id, 3, [(f"{site}/a", f"{site}/x", None), (f"{site}/c", f"{site}/b", None)], 4
        )
        == 1
    )
    assert rows(
        store,
        "SELECT url, level, source_page, keyword, status FROM frontier_urls WHERE run_id = %s ORDER BY url",
        run_id,
    ) == [
        (f"{site}/a", 0, None, "rivers", "discovered"),
        (f"{site}/b", 0, None, None, "discovered"),
        (f"{site}/c", 3, f"{site}/b", None, "discovered"),
    ]
    shard = shard_of(site, 4)
    assert store.frontier.pending_shards(run_id, 0) == [shard]
    # equal scores in the fixed pseudo-random order of by_priority
    assert list(store.frontier.pending_urls(run_id, 0, shard)) == sorted(
        [(f"{site}/a", None, "rivers", 0.0), (f"{site}/b", None, None, 0.0)],
        key=lambda row: shuffle_key(row[0]),
    )
    assert list(store.frontier.pending_urls(run_id, 0, (shard + 1) % 4)) == []
    assert store.frontier.pending_origins(run_id, 0, shard) == {site: 2}
    assert store.frontier.origin_counts(run_id, shard, [site, "http://other.example"]) == {
        site: 3,
        "http://other.example": 0,
    }


def test_a_shards_pending_urls_are_read_in_pages_in_priority_order(store, run_id, site):
    """Pages of two rows each give the level in the order of by_priority (equal scores in their fixed
    pseudo-random order, text in code point order); URLs committed between two pages are neither lost nor
    read again."""
    scores = [0.5, 0.25, 0.25, 0.25, 0.125, 0.0, 0.0]
    paths = ["a", "b", "c", "河川", "e", "f", "Z"]
    links = [Link(f"{site}/{path}", f"{site}/", score) for path, score in zip(paths, scores, strict=True)]
    store.frontier.add_urls(run_id, 0, [(f"{site}/", None, "rivers")], 4)
    store.frontier.commit_pages(run_id, [Page(f"{site}/", None, 0, links=links)], 4)
    shard = shard_of(site, 4)
    expected = [(link.url, link.source, "rivers", link.score) for link in sorted(links, key=by_priority)]
    assert list(store.frontier.pending_urls(run_id, 1, shard, page_size=2)) == expected

    reading = store.frontier.pending_urls(run_id, 1, shard, page_size=2)
    first = [next(reading) for _ in range(3)]  # two pages read
    store.frontier.commit_pages(run_id, [Page(url, source, 1) for url, source, _, _ in first], 4)
    assert first + list(reading) == expected
    assert store.frontier.pending_origins(run_id, 1, shard) == {site: 4}


def test_unstorable_urls_are_logged_and_the_rest_added(store, run_id, site, caplog):
    links = [
        (f"{site}/" + "a" * MAX_URL_BYTES, None, None),
        (f"{site}/nul\x00", None, None),
        ("http://[::1/broken", None, None),
        (f"{site}/fine", None, "key\x00word"),
    ]
    with caplog.at_level(logging.WARNING, logger="geoweb.store"):
        assert store.frontier.add_urls(run_id, 0, links, 2) == 1
    assert len([r for r in caplog.records if "not stored in the frontier" in r.message]) == 3
    assert rows(store, "SELECT url, keyword FROM frontier_urls WHERE run_id = %s", run_id) == [
        (f"{site}/fine", "keyword")
    ]


def test_two_workers_adding_overlapping_links_at_once_add_each_url_once(postgis_dsn, run_id, site):
    barrier = threading.Barrier(2)
    added: list[int] = []

    def worker(first: int) -> None:
        links = [(f"{site}/page/{i}", None, None) for i in range(first, first + 1500)]
        with Store(postgis_dsn) as store:
            barrier.wait()
            added.append(store.frontier.add_urls(run_id, 1, links, 4))

    threads = [threading.Thread(target=worker, args=(first,)) for first in (0, 500)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sum(added) == 2000
    with Store(postgis_dsn) as store:
        assert scalar(store, "SELECT count(*) FROM frontier_urls WHERE run_id = %s", run_id) == 2000


def test_a_run_never_begun_is_refused(store, site):
    with pytest.raises(StoreError, match="unknown run 'never-begun'"):
        store.frontier.add_urls("never-begun", 0, [(f"{site}/", None, None)], 4)
    assert scalar(store, "SELECT count(*) FROM frontier WHERE url = %s", f"{site}/") == 0


def test_a_page_over_the_memory_bound_is_deferred_with_its_reason():
    from geoweb.models import Page, URLStatus
    from geoweb.store.frontier import outcome

    page = Page("http://h/big.html", None, 1, deferred="memory_budget")
    assert outcome(page) == (
        URLStatus.DEFERRED, "memory_budget", "not read: the answer did not fit in the memory bound"
    )  # fmt: skip


def test_a_task_takes_on_only_shards_no_task_of_its_level_crawls_and_none_holds(store, postgis_dsn, run_id):
    """Level-1 tasks of shards a and d: shard b has only level-2 URLs (no level-1 task), c too but another
    task holds it, a still has level-1 URLs. Taken on: b, once, and only while another task works."""
    shards = 8
    host_of: dict[int, str] = {}
    for n in range(200):
        host_of.setdefault(shard_of(origin(f"http://h{n}.example/"), shards), f"http://h{n}.example")
    a, b, c, d = sorted(host_of)[:4]
    store.frontier.add_urls(run_id, 1, [(f"{host_of[s]}/one", None, None) for s in (a, d)], shards)
    store.frontier.add_urls(run_id, 2, [(f"{host_of[s]}/two", None, None) for s in (a, b, c)], shards)
    with Store(postgis_dsn) as task_a, Store(postgis_dsn) as task_d, Store(postgis_dsn) as holder_of_c:
        task_d.frontier.hold_shard(run_id, d)
        assert task_d.frontier.adopt_shard(run_id, 1, shards, {d}) is None  # no other task at work
        task_a.frontier.hold_shard(run_id, a)
        holder_of_c.frontier.hold_shard(run_id, c)
        assert task_d.frontier.adopt_shard(run_id, 1, shards, {d}) == b
        assert task_d.frontier.adopt_shard(run_id, 1, shards, {d, b}) is None
        assert task_a.frontier.adopt_shard(run_id, 1, shards, {a}) is None  # b is d's now
        task_d.frontier.release_shards()
        assert task_a.frontier.adopt_shard(run_id, 1, shards, {a}) == b


def test_a_lost_connection_releases_its_shards_without_an_error(postgis_dsn, run_id, caplog):
    """A task whose connection is lost ends with its own error, not one of releasing what the server already
    let go of with the connection; another task can hold the shard at once."""
    with Store(postgis_dsn) as lost, Store(postgis_dsn) as other:
        lost.frontier.hold_shard(run_id, 3)
        lost.conn.close()
        with caplog.at_level(logging.WARNING, "geoweb.store"):
            lost.frontier.release_shards()
        assert "shards not released, the connection is lost" in caplog.text
        with other.transaction() as cur:
            cur.execute("SET statement_timeout = '10s'")  # a hold that outlived its connection fails the test
        other.frontier.hold_shard(run_id, 3)
