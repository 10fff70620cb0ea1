"""SearXNG: JSON switched off is a settings error with the fix in it, engines all blocked is an error rather
than an empty seed list, and the instance's limiter is a quota refusal."""

from __future__ import annotations

import pytest

from geoweb.connectors import ConfigError, ConnectorError, QuotaExceeded, load_connector
from geoweb.connectors.search.searxng import SearXNG
from tests.standins.searxng import SearXNGStandin
from tests.standins.server import web_pages

KEYWORD = "KML download"


@pytest.fixture(scope="module")
def standin():
    with SearXNGStandin() as searxng:
        searxng.results[KEYWORD] = web_pages(25)
        yield searxng


@pytest.fixture(autouse=True)
def fresh(standin):
    standin.reset()
    standin.json_enabled = True


def records(standin: SearXNGStandin, sleeps: list[float] | None = None, pages: int = 10) -> list:
    sleep = (sleeps if sleeps is not None else []).append
    return list(SearXNG(standin.config(), sleep=sleep).records(query=KEYWORD, pages=pages))


def test_requests_ask_for_json_page_by_page(standin):
    assert len(records(standin)) == 25
    assert [(r.query["format"], r.query["pageno"]) for r in standin.requests] == [
        ("json", "1"), ("json", "2"), ("json", "3"), ("json", "4")
    ]  # fmt: skip


def test_json_switched_off_says_how_to_switch_it_on(standin):
    standin.json_enabled = False
    sleeps: list[float] = []
    with pytest.raises(ConfigError) as refused:
        records(standin, sleeps)
    assert "page 1: HTTP 403 Forbidden (the instance does not serve JSON" in str(refused.value)
    assert "add json to search.formats in its settings.yml" in str(refused.value)
    assert len(standin.requests) == 1 and sleeps == []


def test_every_engine_blocked_on_the_first_page_is_an_error_not_an_empty_list(standin):
    standin.fail(page=1, kind="blocked")
    with pytest.raises(ConnectorError) as failed:
        records(standin)
    assert (
        "page 1: no results; unresponsive engines: google (Suspended: too many requests), duckduckgo (CAPTCHA)"
        in str(failed.value)
    )


def test_engines_blocked_later_end_the_query_with_a_warning(standin, caplog):
    standin.fail(page=2, kind="blocked")
    assert len(records(standin)) == 10
    assert "page 2: unresponsive engines: google" in caplog.text


def test_the_limiter_is_a_quota_refusal_after_retries(standin):
    standin.fail(page=1, kind="quota")
    sleeps: list[float] = []
    with pytest.raises(QuotaExceeded, match="page 1: HTTP 429 Too Many Requests"):
        records(standin, sleeps)
    assert len(standin.requests) == 3 and sleeps == [0.5, 1.0]


def test_the_instance_url_is_required():
    with pytest.raises(ConfigError, match=r"searxng: missing setting\(s\) url"):
        load_connector("searxng", {})
