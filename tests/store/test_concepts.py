"""Concepts in PostGIS: the ontology as the ``concepts`` table, datasets' concepts stored, exported and
searched (a concept finds its narrower concepts), the search documents kept right as datasets and the
ontology change, and the SQL of docs/semantic.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geoweb.geohub import SearchQuery, concept_counts, search
from geoweb.models import Dataset, Resource
from geoweb.semantic import default_ontology, tag_datasets
from geoweb.semantic.ontology import parse_ontology
from geoweb.settings import Settings
from geoweb.store.concepts import load_concepts
from tests.store.pages import page

DOC = Path(__file__).resolve().parents[2] / "docs" / "semantic.md"


def sql_blocks() -> dict[str, str]:
    """The doc's SQL blocks by the heading above them."""
    pattern = re.compile(r"^#+ ([^\n]+)$|^```(\w*)\n(.*?)^```$", re.M | re.S)
    blocks, heading = {}, None
    for match in pattern.finditer(DOC.read_text(encoding="utf-8")):
        if match[1]:
            heading = match[1]
        elif match[2] == "sql":
            blocks[heading] = match[3]
    return blocks


def tagged(site: str) -> list[Resource]:
    """A WFS and a WMS as the crawl records them, their datasets tagged."""
    wfs = Resource(
        url=f"{site}/wfs", type="WFS",
        datasets=[Dataset("ms:lakes", "Great lakes", (1.0, 1.0, 2.0, 2.0)), Dataset("ms:canals"),
                  Dataset("ms:roads"), Dataset("ms:layer_9")],
    )  # fmt: skip
    wms = Resource(url=f"{site}/wms", type="WMS", datasets=[Dataset("rivers", "Rivers")])
    for resource in (wfs, wms):
        tag_datasets(resource.datasets, Settings().concept_lcs_threshold)
    return [wfs, wms]


@pytest.fixture
def loaded(store, run_id, site) -> list[Resource]:
    resources = tagged(site)
    store.frontier.commit_pages(run_id, [page(f"{site}/", 0, None, resources)], 1)
    return resources


def test_migrate_loads_the_ontology_as_a_table(store):
    with store.conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM concepts")
        assert cur.fetchone()[0] == len(default_ontology())
        cur.execute("SELECT label, broader, part_of FROM concepts WHERE id = 'bridge'")
        assert cur.fetchone() == ("bridge", ["transport"], ["road"])
    store.conn.rollback()


def test_loading_another_ontology_replaces_the_table(store):
    other = parse_ontology('{"concepts": [{"id": "fjord", "prefLabel": "fjord"}]}')
    try:
        assert load_concepts(store.conn, other) == 1
        with store.conn.cursor() as cur:
            cur.execute("SELECT id FROM concepts")
            assert cur.fetchall() == [("fjord",)]
    finally:
        load_concepts(store.conn)  # the other tests share the database
    with store.conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM concepts WHERE id = 'fjord'")
        assert cur.fetchone()[0] == 0
    store.conn.rollback()


def test_concepts_are_stored_and_exported(store, run_id, loaded):
    with store.conn.cursor() as cur:
        cur.execute(
            "SELECT d.name, d.concepts FROM datasets d JOIN resources r ON r.id = d.resource_id "
            "WHERE r.url = %s ORDER BY d.position",
            (loaded[0].url,),
        )
        assert cur.fetchall() == [
            ("ms:lakes", ["lake"]), ("ms:canals", ["canal"]), ("ms:roads", ["road"]), ("ms:layer_9", []),
        ]  # fmt: skip
    store.conn.rollback()
    exported = {r["url"]: r for r in store.resources.export(run_id)}
    datasets = exported[loaded[0].url]["dataset_list"]
    assert [d["concepts"] for d in datasets] == [["lake"], ["canal"], ["road"], []]
    assert datasets[0]["extra"]["concept_matches"][0]["method"] == "label"


def test_a_recrawl_that_tags_differently_updates_the_concepts(store, run_id, site, loaded):
    wfs = tagged(site)[0]
    wfs.datasets[3] = Dataset("ms:layer_9", extra={"schema_properties": ["building_type"]})
    tag_datasets(wfs.datasets, Settings().concept_lcs_threshold)
    store.frontier.commit_pages(run_id, [page(f"{site}/again", 0, None, [wfs])], 1)
    with store.conn.cursor() as cur:
        cur.execute(
            "SELECT d.concepts FROM datasets d JOIN resources r ON r.id = d.resource_id "
            "WHERE r.url = %s AND d.name = 'ms:layer_9'",
            (wfs.url,),
        )
        assert cur.fetchone()[0] == ["building"]
    store.conn.rollback()


def indexed(store, url: str, words: str) -> tuple[list[str], bool]:
    """The resource's ``about`` and whether its search document matches ``words``."""
    with store.conn.cursor() as cur:
        cur.execute(
            "SELECT about, search @@ websearch_to_tsquery('english', %s) FROM resources WHERE url = %s",
            (words, url),
        )
        return cur.fetchone()


def test_the_search_document_follows_the_datasets(store, run_id, site, loaded):
    wms = loaded[1]
    about, found = indexed(store, wms.url, "waterway")  # a synonym of watercourse, above river
    assert about == sorted({"river", *default_ontology().ancestors("river")}) and found
    assert indexed(store, wms.url, "rivers")[1]  # the dataset's name and title
    wms.datasets = [Dataset("roads", "Roads")]
    tag_datasets(wms.datasets, Settings().concept_lcs_threshold)
    store.frontier.commit_pages(run_id, [page(f"{site}/again", 0, None, [wms])], 1)
    about, found = indexed(store, wms.url, "waterway")
    assert "river" not in about and "road" in about and not found
    assert indexed(store, wms.url, "roads")[1] and not indexed(store, wms.url, "rivers")[1]
    store.conn.rollback()


def test_the_search_document_follows_the_ontology(store, loaded):
    wms = loaded[1]
    other = parse_ontology('{"concepts": [{"id": "river", "prefLabel": "river", "altLabel": ["fleuve"]}]}')
    try:
        load_concepts(store.conn, other)
        assert indexed(store, wms.url, "fleuve") == (["river"], True)
        assert not indexed(store, wms.url, "waterway")[1]
    finally:
        load_concepts(store.conn)
    assert indexed(store, wms.url, "waterway")[1] and not indexed(store, wms.url, "fleuve")[1]
    store.conn.rollback()


def test_a_concept_search_finds_narrower_concepts(store, run_id, loaded):
    def found(concept: str) -> set[str]:
        query = SearchQuery.checked(concept=concept, run=run_id, limit=100)
        return {hit.url for hit in search(store.conn, query).results}

    wfs, wms = (r.url for r in loaded)
    assert found("hydrography") == {wfs, wms}
    assert found("water_body") == {wfs, wms}
    assert found("watercourse") == {wfs, wms}  # canals and rivers
    assert found("lake") == {wfs}
    assert found("transport") == {wfs}
    assert found("building") == set()
    counts = {c.id: c.resources for c in concept_counts(store.conn)}
    assert counts["canal"] >= 1 and counts["hydrography"] >= counts["water_body"] >= 2
    store.conn.rollback()


def test_the_sql_of_the_doc_runs_and_finds_what_it_says(store, loaded):
    blocks = sql_blocks()
    wfs, wms = (r.url for r in loaded)
    with store.conn.cursor() as cur:
        cur.execute(blocks["All WFS feature types about water bodies"])
        rows = [row for row in cur.fetchall() if row[0] in (wfs, wms)]
        assert [(url, name) for url, name, _, _ in rows] == [(wfs, "ms:lakes"), (wfs, "ms:canals")]
        cur.execute(blocks["Datasets per concept"])
        per_label = dict(cur.fetchall())
        assert per_label["lake"] >= 1 and per_label["road"] >= 1
    store.conn.rollback()
