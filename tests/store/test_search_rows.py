"""``search_rows`` (migration 0013), the narrow row per resource that GeoHub's searches without text read and
count: kept in step with ``resources`` by its trigger whoever writes them, through inserts, updates and
deletes of resources and datasets and a change of the ontology, so that the answer's counts stay exact."""

from __future__ import annotations

from collections import Counter

import pytest

from geoweb.geohub import SearchQuery, search
from geoweb.models import Dataset, Resource
from geoweb.semantic import default_ontology, tag_datasets
from geoweb.semantic.ontology import parse_ontology
from geoweb.settings import Settings
from geoweb.store.concepts import load_concepts
from tests.store.pages import page

COLUMNS = "id, type, provider, last_status, level, ST_AsEWKB(bbox), about"


@pytest.fixture
def loaded(store, run_id, site) -> list[Resource]:
    """A WMS with a box and tagged layers, a WPS without a box, loaded by the crawl's own path."""
    wms = Resource(
        url=f"{site}/wms", type="WMS", provider="Water Agency", bbox=(7.0, 46.0, 8.0, 47.0),
        datasets=[Dataset("rivers", "Rivers", (7.0, 46.0, 7.5, 46.5)), Dataset("roads", "Roads")],
    )  # fmt: skip
    wps = Resource(url=f"{site}/wps", type="WPS", provider="Water Agency", datasets=[Dataset("buffer")])
    for resource in (wms, wps):
        tag_datasets(resource.datasets, Settings().concept_lcs_threshold)
    store.frontier.commit_pages(run_id, [page(f"{site}/", 0, None, [wms, wps])], 1)
    return [wms, wps]


def out_of_step(store) -> list[tuple]:
    """Rows of either table that the other does not hold alike (none, when the trigger did its work)."""
    with store.conn.cursor() as cur:
        cur.execute(
            f"(SELECT {COLUMNS} FROM resources EXCEPT SELECT {COLUMNS} FROM search_rows) "
            f"UNION ALL (SELECT {COLUMNS} FROM search_rows EXCEPT SELECT {COLUMNS} FROM resources)"
        )
        return cur.fetchall()


def assert_counts_are_exact(store, run_id: str) -> None:
    """The answer of a search without text (read from search_rows) counts what ``resources`` holds."""
    answer = search(store.conn, SearchQuery.checked(run=run_id, limit=100))
    with store.conn.cursor() as cur:
        cur.execute(
            "SELECT r.type, r.provider, r.last_status, r.bbox IS NULL, r.about FROM resources r "
            "JOIN run_resources rr ON rr.resource_id = r.id WHERE rr.run_id = %s",
            (run_id,),
        )
        rows = cur.fetchall()
    assert not answer.facets_estimated
    assert answer.total == len(rows) == len(answer.results)
    assert answer.no_footprint == sum(no_box for _, _, _, no_box, _ in rows)
    assert {f.value: f.resources for f in answer.facets.type} == Counter(t for t, *_ in rows)
    assert {f.value: f.resources for f in answer.facets.provider} == Counter(p for _, p, *_ in rows if p)
    assert {f.value: f.resources for f in answer.facets.status} == Counter(s for _, _, s, *_ in rows)
    known = default_ontology()
    assert {c.id: c.resources for c in answer.facets.concept} == Counter(
        c for *_, about in rows for c in about if c in known
    )


def search_row(store, url: str) -> tuple | None:
    """The resource's narrow row (its provider, level, whether it has a box, about) and its row version."""
    with store.conn.cursor() as cur:
        cur.execute(
            "SELECT s.provider, s.level, s.bbox IS NULL, s.about, s.xmin::text FROM search_rows s "
            "JOIN resources r USING (id) WHERE r.url = %s",
            (url,),
        )
        return cur.fetchone()


def test_loaded_resources_have_their_search_rows(store, run_id, loaded):
    assert out_of_step(store) == []
    assert_counts_are_exact(store, run_id)
    provider, level, no_box, about, _ = search_row(store, loaded[0].url)
    assert (provider, level, no_box) == ("Water Agency", 0, False)
    assert {"river", "road", "hydrography", "transport"} <= set(about)


def test_updates_of_resources_reach_their_search_rows(store, run_id, site, loaded):
    wms, wps = (r.url for r in loaded)
    with store.conn.cursor() as cur:
        cur.execute(
            "UPDATE resources SET provider = 'Survey Office', type = 'WFS', level = 3, bbox = NULL "
            "WHERE url = %s",
            (wms,),
        )
        cur.execute(
            "UPDATE resources SET last_status = 'dead', bbox = ST_MakeEnvelope(1, 2, 3, 4, 4326) "
            "WHERE url = %s",
            (wps,),
        )
    assert out_of_step(store) == []
    assert_counts_are_exact(store, run_id)
    assert search_row(store, wms)[:3] == ("Survey Office", 3, True)
    dead = search(store.conn, SearchQuery.checked(run=run_id, answering=True))
    assert [hit.url for hit in dead.results] == [wms]
    store.conn.rollback()


def test_a_revisit_that_only_sees_a_resource_again_writes_no_search_row(store, loaded):
    before = search_row(store, loaded[0].url)
    with store.conn.cursor() as cur:
        cur.execute("UPDATE resources SET last_seen = now() WHERE url = %s", (loaded[0].url,))
    assert search_row(store, loaded[0].url) == before  # the same row version
    store.conn.rollback()


def test_datasets_added_and_deleted_reach_the_concepts(store, run_id, loaded):
    wps = loaded[1].url
    assert search_row(store, wps)[3] == []
    with store.conn.cursor() as cur:
        cur.execute(
            "INSERT INTO datasets (resource_id, position, name, concepts) "
            "SELECT id, 7, 'lakes', '{lake}' FROM resources WHERE url = %s",
            (wps,),
        )
    assert {"lake", "water_body", "hydrography"} <= set(search_row(store, wps)[3])
    assert out_of_step(store) == []
    assert_counts_are_exact(store, run_id)
    with store.conn.cursor() as cur:
        cur.execute(
            "DELETE FROM datasets WHERE resource_id = (SELECT id FROM resources WHERE url = %s)", (wps,)
        )
    assert search_row(store, wps)[3] == []
    assert out_of_step(store) == []
    assert_counts_are_exact(store, run_id)
    store.conn.rollback()


def test_an_ontology_change_reaches_the_concepts(store, run_id, loaded):
    other = parse_ontology('{"concepts": [{"id": "river", "prefLabel": "river"}]}')
    try:
        load_concepts(store.conn, other)  # river has nothing above it now, and road is unknown
        assert search_row(store, loaded[0].url)[3] == ["river", "road"]
        assert out_of_step(store) == []
        assert_counts_are_exact(store, run_id)
    finally:
        load_concepts(store.conn)
    assert "hydrography" in search_row(store, loaded[0].url)[3]
    assert out_of_step(store) == []
    store.conn.rollback()


def test_a_deleted_resource_leaves_no_search_row(store, run_id, loaded):
    with store.conn.cursor() as cur:
        cur.execute("DELETE FROM resources WHERE url = %s", (loaded[0].url,))
    assert search_row(store, loaded[0].url) is None and out_of_step(store) == []
    assert_counts_are_exact(store, run_id)
    assert search(store.conn, SearchQuery.checked(run=run_id)).total == 1
    store.conn.rollback()
