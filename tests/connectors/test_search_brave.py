"""The Brave Search API: the plan's rate windows are read from every answer's headers and waited out before
the next request; a spent per-second window is retried after its reset, a spent month is QuotaExceeded at
once; the token travels in a header and is never shown."""

from __future__ import annotations

import logging
import time

import pytest

from geoweb.connectors import ConfigError, QuotaExceeded
from geoweb.connectors.search.brave import Brave, rate_limit_wait
from tests.standins.brave import KEY, QUOTA_DETAIL, BraveStandin
from tests.standins.server import web_pages

KEYWORD = "OGC SOS"
WRONG_TOKEN = "BSA-wrong-token-that-must-never-be-shown"


@pytest.fixture
def standin():
    with BraveStandin(per_second=2) as brave:
        brave.results[KEYWORD] = web_pages(100)
        yield brave


def test_the_per_second_window_is_waited_out_before_it_is_overrun(standin):
    started = time.monotonic()
    records = list(Brave(standin.config(page_size="4")).records(query=KEYWORD, pages=5))
    assert len(records) == 20
    assert [r.query["offset"] for r in standin.requests] == ["0", "1", "2", "3", "4"]
    assert all(r.query["count"] == "4" and r.headers["x-subscription-token"] == KEY for r in standin.requests)
    assert standin.refused == 0  # paced by the headers: never refused
    assert time.monotonic() - started >= 1.0  # five requests at two a second span at least two windows


def test_a_spent_second_is_retried_after_its_reset(standin):
    standin.fail(page=2, kind="rate", times=1)
    sleeps: list[float] = []
    assert len(list(Brave(standin.config(), sleep=sleeps.append).records(query=KEYWORD, pages=2))) == 40
    assert sleeps[0] == 1.0  # X-RateLimit-Reset of the spent window, not the blind backoff


def test_a_spent_month_is_quota_exceeded_at_once(standin):
    standin.month_used = standin.per_month
    sleeps: list[float] = []
    with pytest.raises(QuotaExceeded, match=f"page 1: HTTP 429 QUOTA_LIMITED: {QUOTA_DETAIL}"):
        list(Brave(standin.config(), sleep=sleeps.append).records(query=KEYWORD))
    assert len(standin.requests) == 1 and sleeps == []


def test_rate_limit_wait_reads_the_spent_windows():
    assert rate_limit_wait({"X-RateLimit-Remaining": "1, 1990", "X-RateLimit-Reset": "1, 2591000"}) is None
    assert rate_limit_wait({"X-RateLimit-Remaining": "0, 1990", "X-RateLimit-Reset": "1, 2591000"}) == 1.0
    assert rate_limit_wait({"X-RateLimit-Remaining": "0, 0", "X-RateLimit-Reset": "1, 2591000"}) == 2591000.0
    assert rate_limit_wait({"X-RateLimit-Remaining": "soon", "Retry-After": "7"}) == 7.0
    assert rate_limit_wait({}) is None


def test_a_refused_token_is_a_settings_error_and_never_shown(standin, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigError) as refused:
        list(Brave(standin.config(key=WRONG_TOKEN)).records(query=KEYWORD))
    assert "HTTP 422 SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid." in str(
        refused.value
    )
    assert WRONG_TOKEN not in str(refused.value) and WRONG_TOKEN not in caplog.text
    assert all(WRONG_TOKEN not in r.url_text for r in standin.requests)


def test_page_size_is_bounded_by_the_api(standin):
    with pytest.raises(ConfigError, match="setting page_size must be 1 to 20"):
        Brave(standin.config(page_size="50"))
