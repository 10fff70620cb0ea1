"""The GeoWeb report of a revisit run, served by a GeoHub of its own over a database holding one revisit run
(``data.load_revisit_run``): its checks by outcome, its operation checks with their failures' reasons, its
slowest and least available services, as JSON and as a page that escapes what strangers' servers sent."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import requests

from geoweb.store import Store
from tests.geohub import data
from tests.geohub.server import geohub_server

REPORT = "geoweb_revisit/" + quote(data.REVISIT_RUN, safe="")
SLOWEST = [data.SERVICES[i].url for i in range(11, 1, -1)]  # service 1 timed out: no time
# by availability over 30 days; service 5 and the hostile file are both at 50 %, service 5 on more checks
LEAST_AVAILABLE = [
    (data.SERVICES[0].url, 15.38, 13),
    (data.SERVICES[1].url, 15.38, 13),
    (data.SERVICES[2].url, 30.77, 13),
    (data.SERVICES[3].url, 35.71, 14),
    (data.SERVICES[4].url, 42.86, 14),
    (data.SERVICES[5].url, 50.0, 14),
    (data.HOSTILE_SERVICE.url, 50.0, 2),
    (data.SERVICES[6].url, 64.29, 14),
    (data.SERVICES[7].url, 71.43, 14),
    (data.SERVICES[8].url, 78.57, 14),
]


@pytest.fixture(scope="module")
def session(postgis_database, tmp_path_factory) -> Iterator[tuple[requests.Session, str]]:
    """A logged-in client of a GeoHub over the revisit run's database, and GeoHub's address."""
    with postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
        data.load_revisit_run(dsn)
        with geohub_server(dsn, tmp_path_factory.mktemp("airflow")) as server:
            client = server.session(server.token())
            yield client, f"{server.base_url}/geohub"
            client.close()


def get(session, path: str) -> requests.Response:
    client, geohub = session
    response = client.get(f"{geohub}{path}", timeout=60)
    assert response.status_code == 200, response.text
    return response


def test_the_report_counts_the_run_s_checks_and_its_operation_checks(session):
    report = get(session, f"/api/runs/{REPORT}").json()["revisit"]
    assert report["outcomes"] == {
        "checked": 13, "unchanged": 11, "changed": 1, "failed": 1, "newly_dead": 1, "revived": 1,
    }  # fmt: skip
    assert report["operations"] == {"ok": 4, "failed": 4}
    assert report["failure_reasons"] == [
        {"operation": "GetMap", "reason": "not_image", "checks": 2},
        {"operation": "GetMap", "reason": "ogc_exception", "checks": 1},
        {"operation": "RangeRead", "reason": data.HOSTILE_REASON, "checks": 1},
    ]
    assert [(c["url"], c["operation"]) for c in report["changed"]] == [
        (data.SERVICES[0].url, "GetCapabilities")
    ]
    assert {(c["url"], c["operation"]) for c in report["failed"]} == {
        (data.SERVICES[1].url, "GetCapabilities"), (data.SERVICES[3].url, "GetMap"),
        (data.SERVICES[4].url, "GetMap"), (data.SERVICES[5].url, "GetMap"), (data.HOSTILE_SERVICE.url, "RangeRead"),
    }  # fmt: skip


def test_the_report_lists_the_slowest_and_the_least_available_services(session):
    report = get(session, f"/api/runs/{REPORT}").json()["revisit"]
    assert [s["url"] for s in report["slowest"]] == SLOWEST
    slowest = report["slowest"][0]
    assert slowest["total_seconds"] == pytest.approx(1.15) and slowest["median_30d_seconds"] == 1.0
    least = [(a["url"], a["availability_30d_percent"], a["checks_30d"]) for a in report["least_available"]]
    assert least == LEAST_AVAILABLE


def test_a_run_without_checks_has_an_empty_report(session):
    report = get(session, "/api/runs/geoweb_revisit/manual__never").json()["revisit"]
    assert set(report["outcomes"].values()) == {0} and report["operations"] == {"ok": 0, "failed": 0}
    assert report["slowest"] == report["least_available"] == report["failure_reasons"] == []


def cells(page: str, table_id: str, css_class: str = "url") -> list[str]:
    """The texts of a table's cells of ``css_class``, unescaped, in order."""
    table = re.search(f'<table id="{table_id}">(.*?)</table>', page, re.S).group(1)
    return [html.unescape(text) for text in re.findall(f'<td class="{css_class}">(.*?)</td>', table, re.S)]


def test_the_page_shows_the_figures_in_order_and_escapes_every_value(session):
    page = get(session, f"/runs/{REPORT}").text
    assert "newly dead <b>1</b>" in page and "revived <b>1</b>" in page and "failed <b>4</b>" in page
    assert cells(page, "slowest") == SLOWEST
    assert cells(page, "least-available") == [url for url, *_ in LEAST_AVAILABLE]
    assert "<script" not in page and 'onerror="' not in page
    assert html.escape(data.HOSTILE_REASON) in page and html.escape(data.HOSTILE_SERVICE.url) in page
    detail = re.search(r'href="([^"]*/api/resources/\d+)"', page).group(1)
    assert get(session, detail.removeprefix("/geohub")).json()["url"] == data.SERVICES[11].url
