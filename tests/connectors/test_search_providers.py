"""What every web-search provider must do, checked against each stand-in (Google, Brave, SearXNG): read result
pages until the provider's last, keep each hit's keyword, and end every failure in a clear error that names
the page, after the hits read before it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from geoweb.connectors import ConfigError, ConnectorError, QuotaExceeded
from geoweb.connectors.search.base import SearchProvider
from geoweb.connectors.search.brave import Brave
from geoweb.connectors.search.google import Google
from geoweb.connectors.search.searxng import SearXNG
from tests.standins import brave, google
from tests.standins.brave import BraveStandin
from tests.standins.google import GoogleStandin
from tests.standins.searxng import SearXNGStandin
from tests.standins.server import Hit, Standin, web_pages

KEYWORD = "web map service"


@dataclass
class Provider:
    """A provider's stand-in and connector class; ``page_size`` hits a page; ``flags_last_page``: whether the
    provider says a page is the last (else an empty page ends the query); ``quota_text``: its quota error."""

    name: str
    standin: Standin
    connector_class: type[SearchProvider]
    page_size: int
    flags_last_page: bool
    quota_text: str

    def connector(self, sleeps: list[float] | None = None, **settings: str) -> SearchProvider:
        sleep = sleeps.append if sleeps is not None else (lambda seconds: None)
        return self.connector_class(self.standin.config(**settings), sleep=sleep)

    def requests_for(self, pages_with_hits: int) -> int:
        return pages_with_hits + (0 if self.flags_last_page else 1)


PROVIDERS = {
    "google": (GoogleStandin, Google, 10, True, google.QUOTA_MESSAGE),
    "brave": (BraveStandin, Brave, 20, True, brave.QUOTA_DETAIL),
    "searxng": (SearXNGStandin, SearXNG, 10, False, "Too Many Requests"),
}


@pytest.fixture(scope="module", params=list(PROVIDERS))
def provider(request):
    standin_class, connector_class, page_size, flags_last_page, quota_text = PROVIDERS[request.param]
    with standin_class() as standin:
        yield Provider(request.param, standin, connector_class, page_size, flags_last_page, quota_text)


@pytest.fixture(autouse=True)
def fresh(provider):
    provider.standin.reset()
    provider.standin.results.clear()


def search(
    provider: Provider, hits: list[Hit], *, pages: int = 10, sleeps: list[float] | None = None
) -> list:
    provider.standin.results[KEYWORD] = hits
    return list(provider.connector(sleeps).records(query=KEYWORD, pages=pages))


def read_until_failure(provider: Provider, hits: list[Hit], sleeps: list[float] | None = None):
    """(records read, error raised) of a search that fails."""
    provider.standin.results[KEYWORD] = hits
    records = []
    with pytest.raises(ConnectorError) as failed:
        records.extend(provider.connector(sleeps).records(query=KEYWORD, pages=10))
    return records, failed.value


def test_pages_are_read_until_the_last_short_one_and_hits_keep_their_keyword(provider):
    hits = web_pages(provider.page_size * 2 + 3)
    records = search(provider, hits)
    assert [r.identifier for r in records] == [h.url for h in hits]
    assert {r.keyword for r in records} == {KEYWORD} and {r.source for r in records} == {provider.name}
    assert records[0].title == hits[0].title and records[0].abstract == hits[0].snippet
    assert records[-1].extra == {"page": 3, "rank": 3}
    assert len(provider.standin.requests) == provider.requests_for(3)


def test_exactly_full_pages_need_no_extra_request_when_the_provider_flags_the_last(provider):
    records = search(provider, web_pages(provider.page_size * 2))
    assert len(records) == provider.page_size * 2
    assert len(provider.standin.requests) == provider.requests_for(2)


def test_no_more_pages_than_asked(provider):
    records = search(provider, web_pages(provider.page_size * 5), pages=2)
    assert len(records) == provider.page_size * 2
    assert len(provider.standin.requests) == 2


def test_no_results_is_an_empty_answer_not_an_error(provider):
    assert search(provider, []) == []
    assert len(provider.standin.requests) == 1


def test_hits_without_an_http_url_are_skipped_and_logged(provider, caplog):
    hits = [
        *web_pages(2),
        Hit("javascript:alert(1)", "bad", "bad"),
        Hit("", "empty", "empty"),
        *web_pages(3)[2:],
    ]
    records = search(provider, hits)
    assert [r.identifier for r in records] == [h.url for h in web_pages(3)]
    assert caplog.text.count("skipped: no http(s) URL") == 2


def test_a_quota_refusal_ends_in_quota_exceeded_with_the_providers_message(provider):
    provider.standin.fail(page=2, kind="quota")
    sleeps: list[float] = []
    records, error = read_until_failure(provider, web_pages(provider.page_size * 3), sleeps)
    assert isinstance(error, QuotaExceeded)
    assert f"{KEYWORD!r} page 2" in str(error) and provider.quota_text in str(error)
    assert len(records) == provider.page_size  # page 1's hits came first


def test_malformed_json_names_the_page(provider):
    provider.standin.fail(page=2, kind="malformed")
    records, error = read_until_failure(provider, web_pages(provider.page_size * 3))
    assert type(error) is ConnectorError
    assert f"{KEYWORD!r} page 2: the answer is not JSON" in str(error)
    assert len(records) == provider.page_size


def test_a_source_failing_on_page_3_is_retried_then_named(provider):
    provider.standin.fail(page=3, kind="server")
    sleeps: list[float] = []
    records, error = read_until_failure(provider, web_pages(provider.page_size * 4), sleeps)
    assert type(error) is ConnectorError and f"{KEYWORD!r} page 3: HTTP 5" in str(error)
    assert len(records) == provider.page_size * 2
    assert len(provider.standin.requests) == 2 + 3  # pages 1-2, then page 3 with two retries
    assert sleeps == [0.5, 1.0]  # backoff, doubled


def test_a_passing_server_error_is_retried(provider):
    provider.standin.fail(page=2, kind="server", times=1)
    sleeps: list[float] = []
    records = search(provider, web_pages(provider.page_size * 2), sleeps=sleeps)
    assert len(records) == provider.page_size * 2 and sleeps == [0.5]


def test_bad_settings_are_refused_naming_the_setting(provider):
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) colour"):
        provider.connector(colour="blue")
    with pytest.raises(ConfigError, match="setting timeout must be a number"):
        provider.connector(timeout="soon")
    with pytest.raises(ConfigError, match="setting url must be an http"):
        provider.connector(url="ftp://example.org")
    with pytest.raises(ConfigError, match="setting timeout must be a number, not 'nan'"):
        provider.connector(timeout="nan")
    with pytest.raises(ConfigError, match="setting key holds characters a header cannot carry") as refused:
        provider.connector(key="secret\nX-Injected: 1")
    assert "secret" not in str(refused.value)


def test_an_oversized_answer_is_cut_off(provider, monkeypatch):
    monkeypatch.setenv("GEOWEB_MAX_BODY_BYTES", "1000")
    records, error = read_until_failure(provider, web_pages(provider.page_size))
    assert type(
        error
    ) is ConnectorError and f"{KEYWORD!r} page 1: the answer is larger than 1000 bytes" in str(error)
    assert records == []
