"""The trigger forms of the catalogue, archive and revisit DAGs in headless Chromium on the real stack: each
opens valid with its defaults, is submitted with the documented minimum for the test web, and its run
succeeds; the run's GeoWeb report tab then shows what it did. (The crawl's form: test_crawl_dag.py.)"""

from __future__ import annotations

import json

import pytest

from stack.airflow_api import AirflowClient, AirflowError
from testweb import catalogue

pytestmark = pytest.mark.testweb

RUN_TIMEOUT = 240.0
STAC_API = "http://127.0.0.1:18042"  # the test web's stac-fastapi: an image archive of STAC items


def triggered(stack: AirflowClient, ui, dag_id: str, fill=None) -> str:
    """Opens the DAG's form, checks it is valid as it opens, fills it with ``fill(ui)``, triggers it and
    waits for the run to succeed; returns the run id."""
    stack.unpause(dag_id)
    form = ui.open_trigger_form(dag_id)
    assert form.can_trigger, f"{dag_id}: Trigger is disabled with the defaults"
    assert not any(form.sections.values()), f"{dag_id}: sections marked in error: {form.sections}"
    assert form.open_sections == ["Run Parameters"]
    if fill:
        fill(ui)
    run_id = ui.trigger()
    assert stack.wait(dag_id, run_id, RUN_TIMEOUT) == "success"
    return run_id


def test_the_catalogue_form_harvests_a_catalogue_and_validates_its_links(stack, testweb, ui):
    def fill(ui):
        ui.fill("catalogues", catalogue.URL)
        ui.fill("allowed_hosts", "127.0.0.1")

    run_id = triggered(stack, ui, "geoweb_catalogues", fill)
    ui.open_report("geoweb_catalogues", run_id)
    harvests = {source: (state, counts) for source, state, counts in ui.report_table("harvests")}
    state, counts = harvests[catalogue.URL]
    assert state == "success" and "received" in counts
    # the validation crawl of the records' links: its levels table, or why there was none
    assert ui.report("!!doc.querySelector('#levels') || /No crawl was run/.test(doc.body.textContent)")


@pytest.fixture
def stac_archive(stack):
    """The Connection geoweb_stac naming the test web's STAC API, as an operator would set it."""
    body = {"connection_id": "geoweb_stac", "conn_type": "generic", "extra": json.dumps({"url": STAC_API})}
    try:
        stack.request("POST", "/connections", json=body)
    except AirflowError as exc:
        if exc.status != 409:  # it exists already
            raise
    yield
    stack.request("DELETE", "/connections/geoweb_stac")


def test_the_archive_form_reads_the_chosen_archive(stack, testweb, ui, stac_archive):
    run_id = triggered(stack, ui, "geoweb_archive", lambda ui: ui.choose("archives", "stac"))
    ui.open_report("geoweb_archive", run_id)
    ((source, state, counts),) = ui.report_table("harvests")
    assert (source, state) == ("stac", "success")
    assert "new " in counts and "pages " in counts


def test_the_revisit_form_checks_what_is_due(stack, testweb, ui):
    run_id = triggered(stack, ui, "geoweb_revisit", lambda ui: ui.fill("allowed_hosts", "127.0.0.1"))
    ui.open_report("geoweb_revisit", run_id)
    outcomes = ui.report("doc.querySelector('#outcomes').textContent")
    assert all(word in outcomes for word in ("unchanged", "changed", "failed")), outcomes
