"""Migration 0027: ``qgis_resources``, the rows ``geoweb export`` writes, ends with each resource's quality,
and the layers of services and files are its rows again, with the columns and types they had (the figures
last, as migration 0025 put them), as are the layers of one kind of service over them."""

from __future__ import annotations

import pytest

from geoweb.store import Store
from geoweb.store.migrations import MIGRATIONS
from tests.store.queries import rows
from tests.store.test_qgis_views import SERVICE_KINDS

QUALITY = [
    ("checks_30d", "integer"),
    ("availability_30d_percent", "numeric"),
    ("response_median", "double precision"),
    ("inspire_availability", "text"),
    ("inspire_getmap", "text"),
]
LAYERS_OF_RESOURCES = ["qgis_services", "qgis_files", *(f"qgis_{kind}_services" for kind in SERVICE_KINDS)]


def columns(store: Store, view: str) -> list[tuple[str, str]]:
    return rows(
        store,
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
        "ORDER BY ordinal_position",
        view,
    )


def test_qgis_resources_ends_with_the_quality(store):
    assert columns(store, "qgis_resources")[-len(QUALITY) :] == QUALITY


@pytest.mark.parametrize("view", LAYERS_OF_RESOURCES)
def test_each_layer_of_resources_has_the_columns_of_qgis_resources(store, view):
    assert columns(store, view) == columns(store, "qgis_resources")


@pytest.mark.parametrize("view", ["qgis_services", "qgis_files"])
def test_the_layers_of_services_and_files_read_qgis_resources_alone(store, view):
    used = "SELECT table_name FROM information_schema.view_table_usage WHERE view_name = %s"
    assert rows(store, used, view) == [("qgis_resources",)]


def test_applying_the_migration_again_changes_nothing(store):
    views = ["qgis_resources", *LAYERS_OF_RESOURCES]
    before = {view: columns(store, view) for view in views}
    with store.transaction() as cur:
        cur.execute((MIGRATIONS / "0027_export_quality.sql").read_text(encoding="utf-8"))
    assert {view: columns(store, view) for view in views} == before
