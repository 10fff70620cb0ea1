"""geoweb.geohub on a real PostGIS database loaded through the store: what the text search reaches and how it
ranks, what each filter finds, both ways of testing a box, the totals and facets of an answer, paging, the
detail, hostile text, and the pooled read-only connections."""

from __future__ import annotations

import threading
from collections import Counter
from urllib.parse import urlsplit

import psycopg2
import pytest

from geoweb.geohub import (
    InvalidSearch,
    SearchDatabase,
    SearchQuery,
    SearchUnavailable,
    resource_checks,
    resource_detail,
    runs,
    search,
)
from geoweb.geohub.searches import MAX_DATASETS, Quality
from geoweb.geohub.sql import chosen_statement
from geoweb.semantic import default_ontology
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
    assert set(found(database, text="mapserv")) == titles(data.RIVERS, data.TESTWEB_WMS)
    assert found(database, text=data.RIVERS.url)[0] == data.RIVERS.title  # a pasted URL
    assert len(found(database, text="geoportal.example")) == EVERYTHING  # the hostile one: by its source page


def test_web_search_syntax(database):
    assert data.RIVERS.title not in found(database, text="water -rivers")
    assert set(found(database, text='"lake survey" or cadastral')) == titles(data.PARCELS, *data.ALPINE)


def test_a_query_of_stop_words_finds_nothing(database):
    assert found(database, text="the of and") == []


def test_a_concept_finds_the_datasets_of_narrower_concepts(database):
    # the Valais map says nothing of water: its dataset is tagged river, a watercourse, a water body, whose
    # broader concept hydrography has the synonym "water"
    assert data.VALAIS.datasets[0].concepts == ["river"]
    assert data.VALAIS.title in found(database, text="water")
    assert data.VALAIS.title in found(database, text="watercourse")
    assert data.VALAIS.title not in found(database, text="lake")


def test_a_provider_finds_its_services(database):
    assert set(found(database, text=data.AUTHORITY)) == titles(data.GAUGES, data.DIKES)
    assert set(found(database, text="water")) >= titles(data.GAUGES, data.DIKES)


def test_a_dataset_name_and_title_find_their_service(database):
    assert found(database, text="gewaesserkarte_fluss") == [data.VALAIS.title]
    assert found(database, text="inspections 2021") == [data.DIKES.title]


def test_the_last_word_is_a_prefix(database):
    assert data.RIVERS.title in found(database, text="riv")
    assert set(found(database, text="taiwan riv")) == titles(data.RIVERS)
    assert found(database, text="zerm") == [data.ZERMATT_TITLE.title, data.ZERMATT_URL.title]
    assert found(database, text='"gauging net"') == []  # a closed phrase is whole words
    assert found(database, text="ri") == []  # too short to be a prefix


def test_words_are_stemmed(database):
    assert found(database, text="inspection") == [data.DIKES.title]
    assert found(database, text="gauged") == [data.GAUGES.title]


def test_a_title_ranks_above_a_url(database):
    with database.connection() as conn:
        hits = search(conn, SearchQuery.checked(text="zermatt")).results
    assert [h.title for h in hits] == [data.ZERMATT_TITLE.title, data.ZERMATT_URL.title]
    assert hits[0].rank > hits[1].rank


@pytest.mark.parametrize(
    "text",
    ["'; DROP TABLE resources; --", '"unclosed', 'a & | ! <-> :* ( ) "', "riv:*", "(((", "\\'", "')::tsquery",
     "🌊 河川", "-", "or", "x" * 500, "the of and"],
)  # fmt: skip
def test_hostile_text_is_a_search_never_an_error(database, text):
    with database.connection() as conn:
        page = search(conn, SearchQuery.checked(text=text))
    assert page.total == len(page.results) and page.next_offset is None


@pytest.mark.parametrize(("text", "message"), [("x" * 10_000, "at most 500"), ("river\x00", "NUL")])
def test_text_that_cannot_be_searched_is_refused_with_the_reason(text, message):
    with pytest.raises(InvalidSearch, match=message):
        SearchQuery.checked(text=text)


# --- filters ---


def test_types(database):
    assert set(found(database, types=["sos", "SHAPEFILE"])) == titles(data.STATIONS, data.ISLANDS, data.HUTS)


@pytest.mark.parametrize(
    ("bbox", "expected"),
    [
        (data.TAIWAN, titles(data.RIVERS, data.HOSTILE)),
        (data.SWITZERLAND, titles(data.PARCELS, *data.ALPINE, *data.SWISS, data.TESTWEB_WMS)),
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


def test_providers_and_resources_without_a_footprint_are_filters(database):
    assert set(found(database, provider=data.AUTHORITY)) == titles(data.GAUGES, data.DIKES)
    assert set(found(database, footprint="none")) == {r.title for r in data.ALL if r.bbox is None}


def test_runs_and_levels(database):
    assert set(found(database, run=data.RUN_1)) == titles(data.RIVERS, data.PARCELS)
    assert set(found(database, level=2)) == titles(data.STATIONS, data.HOSTILE)
    assert found(database, run=data.RUN_1, level=2) == []
    assert found(database, run="no such run") == []


def test_every_filter_at_once(database):
    got = found(database, text="rivers", types=["WMS"], bbox=data.TAIWAN, run=data.RUN_1, level=1)
    assert got == [data.RIVERS.title]


# --- totals and facets ---


def answer(database, **params):
    with database.connection() as conn:
        return search(conn, SearchQuery.checked(**params))


def in_box(resource, box) -> bool:
    """Whether the resource's box meets ``box`` (neither crosses the antimeridian)."""
    if resource.bbox is None:
        return False
    west, south, east, north = resource.bbox
    return west <= box[2] and box[0] <= east and south <= box[3] and box[1] <= north


def concepts_of(resource) -> set[str]:
    """Its datasets' concepts and every concept above them."""
    ontology = default_ontology()
    tags = {c for d in resource.datasets for c in d.concepts}
    return tags.union(*(ontology.ancestors(c) for c in tags))


def test_totals_and_facets_count_every_match(database):
    page = answer(database, limit=5)
    assert page.total == EVERYTHING and len(page.results) == 5
    assert (page.outside_box, page.no_footprint) == (0, sum(r.bbox is None for r in data.ALL))
    assert {f.value: f.resources for f in page.facets.type} == Counter(r.type for r in data.ALL)
    assert {f.value: f.resources for f in page.facets.provider} == Counter(
        r.provider for r in data.ALL if r.provider
    )
    assert {c.id: c.resources for c in page.facets.concept} == Counter(
        c for r in data.ALL for c in concepts_of(r)
    )
    deeper = titles(data.STATIONS, data.HOSTILE)  # level 2 in run-2, every other one level 1
    assert {f.level: f.resources for f in page.facets.level} == {1: EVERYTHING - 2, 2: 2}
    assert {f.value: f.resources for f in page.facets.status} == {"ok": EVERYTHING}
    assert not deeper & {h.title for h in answer(database, level=1, run=data.RUN_2, limit=100).results}


def test_a_chosen_level_counts_every_level_so_the_others_stay_offered(database):
    by_level = {1: EVERYTHING - 2, 2: 2}
    for run in (None, data.RUN_2):  # the sightings of a run alone, and the candidates of a search
        page = answer(database, level=2, run=run)
        assert page.total == 2 and {f.level: f.resources for f in page.facets.level} == by_level
    text = answer(database, text="water", level=2)
    levels = {f.level: f.resources for f in text.facets.level}
    assert levels.get(2, 0) == text.total and sum(levels.values()) == len(found(database, text="water"))
    boxed = answer(database, text="water", level=1, bbox=data.SWITZERLAND)
    assert {f.level: f.resources for f in boxed.facets.level} == {1: boxed.total}  # the box still counts


def test_totals_and_facets_follow_the_query(database):
    page = answer(database, text="water", limit=3)
    every = found(database, text="water")
    assert page.total == len(every) > 3
    by_type = Counter(r.type for r in data.ALL if r.title in every)
    assert {f.value: f.resources for f in page.facets.type} == by_type
    assert {c.id: c.resources for c in page.facets.concept}["river"] == len(
        [r for r in data.ALL if r.title in every and "river" in concepts_of(r)]
    )
    wms = answer(database, text="water", types=["WMS"])
    assert wms.total == by_type["WMS"] and [f.value for f in wms.facets.type] == ["WMS"]


def test_the_box_says_what_it_left_out(database):
    page = answer(database, bbox=data.SWITZERLAND)
    inside = [r for r in data.ALL if in_box(r, data.SWITZERLAND)]
    assert page.total == len(inside)
    assert page.outside_box == sum(r.bbox is not None and not in_box(r, data.SWITZERLAND) for r in data.ALL)
    assert page.no_footprint == sum(r.bbox is None for r in data.ALL)
    assert page.total + page.outside_box + page.no_footprint == EVERYTHING
    # the stations have no box: text finds them, the box does not, and the answer says so
    desert = answer(database, text="desert", bbox=data.SAHARA)
    assert (desert.total, desert.outside_box, desert.no_footprint) == (0, 0, 1)
    assert answer(database, text="desert", footprint="none").results[0].title == data.STATIONS.title


@pytest.mark.parametrize("params", [{}, {"text": "lake"}, {"bbox": (-180.0, -90.0, 180.0, 90.0)}])
def test_above_a_number_of_matches_facets_are_estimated_from_a_sample_and_say_so(database, params):
    exact = answer(database, **params)
    with database.connection() as conn:
        query = SearchQuery.checked(**params)
        estimated, again = (search(conn, query, exact_facets=exact.total // 2) for _ in range(2))
    assert not exact.facets_estimated and estimated.facets_estimated
    # the total and what the box leaves out stay exact, and so do the results
    assert (estimated.total, estimated.outside_box, estimated.no_footprint) == (
        exact.total, exact.outside_box, exact.no_footprint,
    )  # fmt: skip
    assert estimated.results == exact.results
    assert estimated.facets == again.facets  # the same sample each time
    # a sample of the matches, scaled to the total: a facet's counts add up to it (give or take rounding)
    types = {f.value: f.resources for f in estimated.facets.type}
    assert set(types) <= {f.value for f in exact.facets.type}
    assert abs(sum(types.values()) - exact.total) <= len(types) / 2
    assert {f.value: f.resources for f in estimated.facets.status} == {"ok": exact.total}
    assert {c.id for c in estimated.facets.concept} <= {c.id for c in exact.facets.concept}


def test_unknown_types_and_contradictions_are_refused():
    with pytest.raises(InvalidSearch, match="no type WMX"):
        SearchQuery.checked(types=["WMS", "wmx"])
    with pytest.raises(InvalidSearch, match="footprint"):
        SearchQuery.checked(footprint="some")
    with pytest.raises(InvalidSearch, match="leave out bbox"):
        SearchQuery.checked(footprint="none", bbox=data.SAHARA)


def test_the_conformance_facet_counts_with_every_filter(database):
    facet = answer(database, text="survey", bbox=data.SWITZERLAND, run=data.RUN_2, level=1).facets.conformance
    assert [(f.value, f.resources) for f in facet] == [("conformant", 1), ("readable", 1)]
    judged = answer(database, conformance=["identified", "readable"], bbox=data.SWITZERLAND)
    assert [h.title for h in judged.results] == [data.READABLE_SURVEY.title]
    assert judged.no_footprint == 1  # the tile service, which no box finds


def test_an_export_takes_the_matches_in_the_search_s_order(database, geohub_dsn):
    """Equal ranks by conformance there too: the readable survey, the newest, last."""
    query = SearchQuery.checked(text="alpine lake survey", limit=100)
    with database.connection() as conn, conn.cursor() as cur:
        cur.execute(*chosen_statement(query, 100))
        chosen = [row[0] for row in cur.fetchall()]
        ranked = [hit.id for hit in search(conn, query).results]
    assert chosen == ranked and chosen[-1] == data.resource_id(geohub_dsn, data.READABLE_SURVEY)


# --- quality ---


def hits_by_url(database, **params) -> dict:
    with database.connection() as conn:
        return {hit.url: hit for hit in search(conn, SearchQuery.checked(limit=100, **params)).results}


def test_each_result_carries_its_availability_response_time_and_inspire_verdicts(database):
    hits = hits_by_url(database, text="harbour soundings")
    assert hits[data.STEADY.url].quality == Quality(54, 100.0, 0.39, "met", "met", "met")
    assert hits[data.FLAKY.url].quality == Quality(30, 66.67, 2.0, "not met", "not enough checks", "not met")
    never = hits_by_url(database, text="rivers taiwan")[data.RIVERS.url].quality
    assert never == Quality(0, None, None, "not enough checks", "not enough checks", "not enough checks")
    assert hits_by_url(database, text="parcels")[data.PARCELS.url].quality.inspire is None  # a WFS


def test_equal_ranks_put_a_reliable_service_above_a_failing_one(database, geohub_dsn):
    """The flaky one is the newer: only its reliability puts it below, in the search and in its export."""
    query = SearchQuery.checked(text="harbour soundings")
    with database.connection() as conn, conn.cursor() as cur:
        hits = search(conn, query).results
        cur.execute(*chosen_statement(query, 100))
        exported = [row[0] for row in cur.fetchall()]
    assert [h.url for h in hits] == [data.STEADY.url, data.FLAKY.url] and hits[0].rank == hits[1].rank
    assert exported == [h.id for h in hits]
    assert data.resource_id(geohub_dsn, data.FLAKY) > data.resource_id(geohub_dsn, data.STEADY)


@pytest.mark.parametrize("text", ["", "harbour"])  # from search_rows, and from resources
def test_availability_and_inspire_filter_and_the_inspire_facet_counts(database, text):
    assert set(hits_by_url(database, text=text, min_availability=99)) == {data.STEADY.url}
    assert set(hits_by_url(database, text=text, min_availability=50)) == {data.STEADY.url, data.FLAKY.url}
    assert set(hits_by_url(database, text=text, inspire=["met"])) == {data.STEADY.url}
    assert set(hits_by_url(database, text=text, inspire=["not met"])) == {data.FLAKY.url}
    facet = [(f.value, f.resources) for f in answer(database, text=text).facets.inspire]
    unjudged = sum(r.type == "WMS" for r in data.ALL if r not in data.HARBOURS)  # never checked
    assert facet == [("met", 1), ("not met", 1)] + ([] if text else [("not enough checks", unjudged)])


def test_a_detail_gives_the_quality_figures_with_their_rules_and_the_checks_in_time_order(
    database, geohub_dsn
):
    steady = data.resource_id(geohub_dsn, data.STEADY)
    with database.connection() as conn:
        quality = resource_detail(conn, steady).quality
        checks = resource_checks(conn, steady)
        flaky = resource_checks(conn, data.resource_id(geohub_dsn, data.FLAKY))
        assert resource_checks(conn, 10**12) is None
    assert (quality.checks_30d, quality.availability_30d_percent, quality.inspire_availability) == (
        54,
        100,
        "met",
    )
    assert quality.inspire_availability_rule.startswith("INSPIRE view service availability: at least 99 %")
    assert quality.inspire_getmap_rule.startswith("INSPIRE view service performance: GetMap first byte")
    assert quality.operations_30d["GetMap"]["checks"] == 24
    assert [(c.operation, c.total_seconds) for c in checks] == [(o, s) for _, o, s in data.STEADY_CHECKS]
    assert [c.checked_at for c in checks] == sorted(c.checked_at for c in checks)
    assert [c.outcome for c in flaky] == [outcome for outcome, _, _ in data.FLAKY_CHECKS]


def test_availability_and_inspire_are_checked():
    query = SearchQuery.checked(min_availability=99.5, inspire=["Not  met", "met", "met"])
    assert (query.min_availability, query.inspire) == (99.5, ("met", "not met"))
    with pytest.raises(InvalidSearch, match="min_availability"):
        SearchQuery.checked(min_availability=101)
    with pytest.raises(InvalidSearch, match="no verdict maybe"):
        SearchQuery.checked(inspire=["maybe"])


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


def test_conformance_levels_are_checked_and_kept_once_in_their_order():
    query = SearchQuery.checked(conformance=["Readable", "conformant", " readable", ""])
    assert query.conformance == ("conformant", "readable")
    with pytest.raises(InvalidSearch, match="no level sloppy"):
        SearchQuery.checked(conformance=["sloppy"])


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
