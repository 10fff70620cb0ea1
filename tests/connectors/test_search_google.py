"""The Google Custom Search JSON API: the key in a header, never in a URL, a message or a log; start/num
paging up to the 100th result; the closed API and quota refusals as QuotaExceeded."""

from __future__ import annotations

import logging

import pytest

from geoweb.connectors import ConfigError, QuotaExceeded, load_connector
from geoweb.connectors.search.google import Google
from tests.standins.google import CLOSED_MESSAGE, CX, KEY, GoogleStandin
from tests.standins.server import web_pages

KEYWORD = "WMS getcapabilities"
WRONG_KEY = "AIzaSy-wrong-key-that-must-never-be-shown"


@pytest.fixture(scope="module")
def standin():
    with GoogleStandin() as google:
        google.results[KEYWORD] = web_pages(150)
        yield google


@pytest.fixture(autouse=True)
def fresh(standin):
    standin.reset()


def connector(standin: GoogleStandin, sleeps: list[float] | None = None, **settings: str) -> Google:
    return Google(standin.config(**settings), sleep=(sleeps if sleeps is not None else []).append)


def test_pages_are_asked_by_start_and_num_with_the_key_in_a_header(standin):
    records = list(connector(standin).records(query=KEYWORD, pages=3))
    assert len(records) == 30
    assert [(r.query["start"], r.query["num"], r.query["cx"]) for r in standin.requests] == [
        ("1", "10", CX), ("11", "10", CX), ("21", "10", CX)
    ]  # fmt: skip
    assert all(r.headers["x-goog-api-key"] == KEY and KEY not in r.url_text for r in standin.requests)
    assert all("GeoWebHarvester" in r.headers["user-agent"] for r in standin.requests)


def test_a_query_stops_at_the_100th_result(standin, caplog):
    caplog.set_level(logging.INFO, "geoweb.connectors")
    records = list(connector(standin).records(query=KEYWORD, pages=12))
    assert len(records) == 100 and records[-1].identifier == web_pages(100)[-1].url
    assert standin.requests[-1].query["start"] == "91"
    assert "google serves 10 result pages a query at most: reading 10, not 12" in caplog.text


def test_files_keep_the_media_type_google_names(standin):
    kml = next(r for r in connector(standin).records(query=KEYWORD, pages=1) if r.identifier.endswith(".kml"))
    assert kml.links[0].protocol == "application/vnd.google-earth.kml+xml"


def test_the_closed_api_is_a_quota_refusal_without_retries(standin):
    standin.fail(page=1, kind="closed")
    sleeps: list[float] = []
    with pytest.raises(QuotaExceeded, match=f"page 1: HTTP 403 PERMISSION_DENIED: {CLOSED_MESSAGE}"):
        list(connector(standin, sleeps).records(query=KEYWORD))
    assert len(standin.requests) == 1 and sleeps == []


def test_the_per_minute_limit_is_waited_out(standin):
    standin.fail(page=2, kind="rate", times=1)
    sleeps: list[float] = []
    assert len(list(connector(standin, sleeps).records(query=KEYWORD, pages=2))) == 20
    assert sleeps == [0.5]


def test_a_refused_key_is_a_settings_error_and_never_shown(standin, caplog):
    caplog.set_level(logging.DEBUG)  # urllib3 logs every request line at DEBUG
    with pytest.raises(ConfigError) as refused:
        list(connector(standin, key=WRONG_KEY).records(query=KEYWORD))
    assert "HTTP 400 INVALID_ARGUMENT: API key not valid" in str(refused.value)
    assert WRONG_KEY not in str(refused.value) and WRONG_KEY not in caplog.text
    assert "GET /customsearch/v1?cx=" in caplog.text  # the request was logged, without its key


def test_missing_settings_are_named():
    with pytest.raises(ConfigError, match="google: missing setting"):
        load_connector("google", {"cx": CX})
    with pytest.raises(ConfigError, match="google: missing setting"):
        load_connector("google", {"key": KEY})
