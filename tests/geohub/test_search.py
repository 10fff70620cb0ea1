"""geoweb.geohub on a real PostGIS database loaded through the store: what each filter finds, both ways of
testing a box, paging, the detail, and the pooled read-only connections."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import psycopg2
import pytest

from geoweb.geohub import (
    InvalidSearch,
    SearchDatabase,
    SearchQuery,
    SearchUnavailable,
    resource_detail,
    runs,
    search,
)
from geoweb.geohub.searches import MAX_DATASETS
from stack.postgres import SUPERUSER_DSN
from tests.geohub import data

EVERYTHING = len(data.ALL)


@pytest.fixture(scope="module")
def database(geohub_dsn):
    db = SearchDatabase(lambda: geohub_dsn)
    yield db
    db.close()


def found(database, **params) -> list[str]:
    """Titles of every result, in order (one page of up to 100)."""
    with database.connection() as conn:
        return [hit.title for hit in search(conn, SearchQuery.checked(limit=100, **params)).results]


def titles(*resources) -> set[str]:
    return {r.title for r in resources}


# --- text ---


def test_words_find_titles_first(database):
    assert found(database, text="rivers")[0] == data.RIVERS.title
    assert found(database, text="alpine lake survey 07") == ["Alpine lake survey 07"]


def test_the_search_keyword_that_led_to_a_resource_finds_it(database):
    # the parcels say nothing of hydrography: the keyword of the portal page that led to them does
    assert titles(data.PARCELS) <= set(found(database, text="hydrography"))


def test_the_page_that_linked_to_a_resource_finds_it(database):
    assert set(found(database, text="portal.example.org")) == titles(data.RIVERS, data.PARCELS)
    assert set(found(database, text="catalogue")) == titles(data.RIVERS, data.PARCELS)


def test_urls_are_found_by_address_and_by_word(database):
    assert found(database, text="mapserv") == [data.RIVERS.title]
    assert found(database, text=data.RIVERS.url)[0] == data.RIVERS.title  # a pasted URL
    assert len(found(database, text="geoportal.example")) == EVERYTHING  # the hostile one: by its source page


def test_web_search_syntax(database):
    assert data.RIVERS.title not in found(database, text="water -rivers")
    assert set(found(database, text='"lake survey" or cadastral')) == titles(data.PARCELS, *data.ALPINE)


def test_a_query_of_stop_words_finds_nothing(database):
    assert found(database, text="the of and") == []


# --- filters ---


def test_types(database):
    assert set(found(database, types=["sos", "SHAPEFILE"])) == titles(data.STATIONS, data.ISLANDS)


@pytest.mark.parametrize(
    ("bbox", "expected"),
    [
        (data.TAIWAN, titles(data.RIVERS, data.HOSTILE)),
        (data.SWITZERLAND, titles(data.PARCELS, *data.ALPINE)),
        ((178.0, -20.0, -178.0, -15.0), titles(data.ISLANDS)),  # across the antimeridian
        ((-179.5, -18.0, -179.2, -17.0), titles(data.ISLANDS)),  # its part east of the antimeridian
        ((0.0, -10.0, 170.0, -5.0), set()),  # in the latitudes of Fiji, not across its longitudes
        ((-180.0, -90.0, 180.0, 90.0), {r.title for r in data.ALL if r.bbox}),
    ],
)
def test_boxes_meet_resource_boxes(database, bbox, expected):
    assert set(found(database, bbox=bbox)) == expected


def test_a_resource_without_a_box_is_not_in_any_box(database):
    # its datasets' footprints are not searched: a resource's box holds them (the detectors make it so)
    assert found(database, bbox=data.SAHARA) == []
    assert found(database, text="desert") == [data.STATIONS.title]


def test_runs_and_levels(database):
    assert set(found(database, run=data.RUN_1)) == titles(data.RIVERS, data.PARCELS)
    assert set(found(database, level=2)) == titles(data.STATIONS, data.HOSTILE)
    assert found(database, run=data.RUN_1, level=2) == []
    assert found(database, run="no such run") == []


def test_every_filter_at_once(database):
    got = found(database, text="rivers", types=["WMS"], bbox=data.TAIWAN, run=data.RUN_1, level=1)
    assert got == [data.RIVERS.title]


# --- pages ---


def test_pages_follow_each_other_without_repeats(database):
    seen, offset = [], 0
    with database.connection() as conn:
        while offset is not None:
            page = search(conn, SearchQuery.checked(limit=7, offset=offset))
            seen += [hit.id for hit in page.results]
            offset = page.next_offset
    assert len(seen) == len(set(seen)) == EVERYTHING
    assert seen == sorted(seen, reverse=True)  # newest first without text


def test_ranked_pages_keep_their_order(database):
    one_page = found(database, text="alpine lake")
    with database.connection() as conn:
        pages = [
            search(conn, SearchQuery.checked(text="alpine lake", limit=10, offset=o)) for o in (0, 10, 20)
        ]
    assert [hit.title for page in pages for hit in page.results] == one_page
    ranks = [hit.rank for page in pages for hit in page.results]
    assert ranks == sorted(ranks, reverse=True)


# --- detail ---


def test_the_detail_of_a_resource(database, geohub_dsn):
    with database.connection() as conn:
        detail = resource_detail(conn, data.resource_id(geohub_dsn, data.STATIONS))
    assert detail.bbox is None and detail.level == 2 and detail.source_page == f"{data.SITE}/more/index.html"
    assert [(d.name, d.footprint is None) for d in detail.datasets] == [("north", False), ("none", True)]
    assert detail.capabilities_url == f"{data.STATIONS.url}?service=SOS&request=GetCapabilities"


def test_a_detail_lists_the_first_datasets_and_counts_them_all(database, geohub_dsn):
    with database.connection() as conn:
        detail = resource_detail(conn, data.resource_id(geohub_dsn, data.ARCHIVE))
    assert detail.datasets_total == 1001
    assert [d.position for d in detail.datasets] == list(range(MAX_DATASETS))


def test_unknown_resource(database):
    with database.connection() as conn:
        assert resource_detail(conn, 10**12) is None


def test_runs_newest_first(database):
    with database.connection() as conn:
        assert [(r.run_id, r.status) for r in runs(conn)] == [
            (data.RUN_2, "success"),
            (data.RUN_1, "success"),
        ]


# --- checked queries ---


def test_a_box_across_the_antimeridian_is_two_boxes():
    query = SearchQuery.checked(bbox="170,-20,-170,-10")
    assert query.boxes() == [(170.0, -20.0, 180.0, -10.0), (-180.0, -20.0, -170.0, -10.0)]


def test_text_is_tidied_and_types_upper_cased():
    query = SearchQuery.checked(text="  river \n gauges ", types=["wms", "WMS", " wfs", ""])
    assert query.text == "river gauges" and query.types == ("WFS", "WMS")
    assert SearchQuery.checked(text="data.example.org").is_address
    assert not SearchQuery.checked(text="river gauges").is_address


@pytest.mark.parametrize(
    "params",
    [{"bbox": (float("inf"), 0, 1, 1)}, {"bbox": "1,2,3,4,5"}, {"types": ["x" * 251]}, {"level": 1001},
     {"text": "a\x00b"}, {"run": "x" * 251}],
)  # fmt: skip
def test_bad_queries_are_refused(params):
    with pytest.raises(InvalidSearch):
        SearchQuery.checked(**params)


# --- connections ---


def test_searches_cannot_write(database):
    with pytest.raises(SearchUnavailable, match="read-only"), database.connection() as conn:
        conn.cursor().execute("DELETE FROM resources")
    assert len(found(database)) == EVERYTHING


def test_an_unreachable_database_is_unavailable_and_its_password_is_not_told(geohub_dsn):
    closed = urlsplit(geohub_dsn)._replace(netloc="geoweb:s3cret-word@127.0.0.1:1").geturl()
    db = SearchDatabase(lambda: closed)
    with pytest.raises(SearchUnavailable) as caught, db.connection():
        pass
    assert "s3cret-word" not in str(caught.value)
    db.close()


def test_a_lost_connection_is_replaced(geohub_dsn):
    db = SearchDatabase(lambda: geohub_dsn, max_connections=1)
    with db.connection() as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    with psycopg2.connect(SUPERUSER_DSN) as admin, admin.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))  # waits until it is gone
        assert cur.fetchone() == (True,)
    with pytest.raises(SearchUnavailable), db.connection() as conn:  # the pooled connection is gone
        search(conn, SearchQuery.checked())
    with db.connection() as conn:  # and not given out again
        assert search(conn, SearchQuery.checked()).results
    db.close()


def test_busy_connections_make_a_search_wait_then_give_up(geohub_dsn):
    db = SearchDatabase(lambda: geohub_dsn, max_connections=1, wait_seconds=0.5)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.connection():
            holding.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(10)
    with pytest.raises(SearchUnavailable, match="busy"), db.connection():
        pass
    release.set()
    holder.join()
    with db.connection() as conn:  # free again
        assert search(conn, SearchQuery.checked(limit=1)).results
    db.close()
