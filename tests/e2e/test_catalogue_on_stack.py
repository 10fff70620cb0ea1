"""The catalogue on the real stack: the Airflow API server's /geohub/csw and /geohub/records, read with
OWSLib's CSW and OGC API - Records clients as QGIS MetaSearch reads them, over what a crawl of the test web
loaded (the fresh deployment's scheduled crawl, or one run here when the database has none)."""

from __future__ import annotations

import psycopg2
import pytest
import requests
from owslib import fes
from owslib.csw import CatalogueServiceWeb
from owslib.ogcapi.records import Records
from owslib.wms import WebMapService

from stack.airflow_api import ADMIN, admin_password
from stack.catalogue import PUBLIC_URL
from stack.demo import crawl_conf, run_crawl
from stack.layout import API_URL, GEOWEB_DB

pytestmark = pytest.mark.testweb

TESTWEB_WMS = "http://127.0.0.1:18010/%"  # the test web's MapServer


def query(sql: str, *args) -> list[tuple]:
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def wms_of_the_testweb() -> int:
    [(count,)] = query("SELECT count(*) FROM resources WHERE type = 'WMS' AND url LIKE %s", TESTWEB_WMS)
    return count


@pytest.fixture(scope="module")
def auth(stack, testweb) -> dict[str, str]:
    """An admin's bearer token, once the stack's database holds a crawl of the test web."""
    if not wms_of_the_testweb():
        run_id, state = run_crawl(stack, crawl_conf(testweb), timeout=300)
        assert state == "success", f"the crawl {run_id} ended {state}"
    answer = requests.post(
        f"{API_URL}/auth/token", json={"username": ADMIN, "password": admin_password()}, timeout=30
    )
    answer.raise_for_status()
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def test_the_api_server_serves_the_harvest_as_csw_and_records(auth):
    csw = CatalogueServiceWeb(f"{PUBLIC_URL}/csw", headers=auth, timeout=60)
    [get_records] = [op for op in csw.operations if op.name == "GetRecords"]
    assert {m["url"] for m in get_records.methods} == {f"{PUBLIC_URL}/csw"}
    [(resources,)] = query("SELECT count(*) FROM resources")
    csw.getrecords2(esn="brief", maxrecords=1)
    assert csw.results["matches"] == resources

    csw.getrecords2(constraints=[fes.PropertyIsEqualTo("dc:format", "WMS")], esn="full", maxrecords=100)
    links = [ref["url"] for r in csw.records.values() for ref in r.references if ref["scheme"] == "OGC:WMS"]
    served = [url for url in links if url.startswith(TESTWEB_WMS.rstrip("%"))]
    assert len(served) == wms_of_the_testweb()
    assert list(WebMapService(served[0], version="1.3.0").contents)

    records = Records(f"{PUBLIC_URL}/records", headers=auth, timeout=60)
    page = records.collection_items("resources", format="WMS", limit=5, offset=0)
    assert page["numberMatched"] == csw.results["matches"]
    assert {f["id"] for f in page["features"]} <= set(csw.records)
    service_links = [link for f in page["features"] for link in f["links"] if link.get("rel") == "service"]
    assert service_links and all(link["protocol"] == "OGC:WMS" for link in service_links)


def test_without_a_login_the_catalogue_answers_401(auth):
    for url in (f"{PUBLIC_URL}/csw?service=CSW&request=GetCapabilities", f"{PUBLIC_URL}/records"):
        assert requests.get(url, timeout=30).status_code == 401
