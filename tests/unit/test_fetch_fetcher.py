"""The fetcher on well-behaved answers: pages, error statuses, redirects, encodings, ranges, caps, counters."""

import asyncio
import email.utils
from collections import Counter

import pytest

from geoweb.fetch import Fetcher, Response
from geoweb.fetch.fetcher import retry_after_seconds
from geoweb.settings import Settings
from tests.hostile.servers import PAGE, HostileServer, fetch_each, loopback_settings


@pytest.fixture(scope="module")
def server():
    with HostileServer() as server:
        yield server


def test_a_page_with_lower_case_headers_and_our_request_headers(server):
    settings = loopback_settings(server)
    [response] = fetch_each(settings, server.url("/ok"))
    assert isinstance(response, Response)
    assert (response.status, response.body, response.complete) == (200, PAGE, True)
    assert response.url == response.final_url == server.url("/ok")
    assert response.redirects == []
    assert response.content_type == "text/html"
    assert response.content_length == len(PAGE)
    assert all(name == name.lower() for name in response.headers)
    sent = next(seen for seen in server.seen if seen.path == "/ok").headers
    assert sent["User-Agent"] == settings.user_agent
    assert sent["Accept-Encoding"] == "gzip, deflate"


@pytest.mark.parametrize("status", [400, 404, 410, 501])
def test_error_statuses_are_responses_not_exceptions(server, status):
    # OGC servers answer exception reports with 400; the detector wants to read them
    [response] = fetch_each(loopback_settings(server, retries=0), server.url(f"/status/{status}"))
    assert isinstance(response, Response)
    assert (response.status, response.body) == (status, f"status {status}".encode())


def test_a_redirect_chain_is_recorded(server):
    [response] = fetch_each(loopback_settings(server), server.url("/chain/3"))
    assert response.status == 200 and response.body == PAGE
    assert response.url == server.url("/chain/3")
    assert response.final_url == server.url("/chain/0")
    assert response.redirects == [server.url(f"/chain/{n}") for n in (3, 2, 1)]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_every_redirect_status_is_followed(server, status):
    target = server.url("/ok")
    [response] = fetch_each(loopback_settings(server), server.url(f"/redirect?status={status}&to={target}"))
    assert (response.status, response.final_url) == (200, target)


def test_max_redirects_is_the_number_followed(server):
    settings = loopback_settings(server, max_redirects=2)
    ok, too_many = fetch_each(settings, server.url("/chain/2"), server.url("/chain/3"))
    assert isinstance(ok, Response) and ok.status == 200
    assert not isinstance(too_many, Response) and too_many.reason == "redirects"


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_compressed_bodies_are_decoded(server, encoding):
    [response] = fetch_each(loopback_settings(server), server.url(f"/encoded/{encoding}"))
    assert (response.body, response.complete) == (PAGE, True)


def test_a_range_request_gets_206_and_the_stored_bytes(server):
    [response] = fetch_each(
        loopback_settings(server), server.url("/bytes/131072"), headers={"Range": "bytes=-65536"}
    )
    assert response.status == 206
    assert response.body == bytes(range(256)) * 256
    assert response.headers["content-range"] == "bytes 65536-131071/131072"
    sent = next(seen for seen in server.seen if seen.path == "/bytes/131072").headers
    assert sent["Accept-Encoding"] == "identity"


def test_max_bytes_per_call(server):
    exact, over_length = fetch_each(
        loopback_settings(server), server.url("/bytes/4096"), server.url("/bytes/8192"), max_bytes=4096
    )
    assert (len(exact.body), exact.complete) == (4096, True)
    assert (over_length.body, over_length.complete) == (b"", False)


def test_everything_is_counted(server):
    stats = Counter()
    fetch_each(
        loopback_settings(server, retries=0),
        server.url("/ok"),
        server.url("/chain/1"),
        server.url("/status/404"),
        stats=stats,
    )
    assert stats["fetch/requests"] == 5  # robots.txt, /ok, /chain/1, /chain/0, /status/404
    assert (
        stats["fetch/status/200"] == 2 and stats["fetch/status/301"] == 1 and stats["fetch/status/404"] == 2
    )
    assert stats["fetch/redirected"] == 1
    assert stats["fetch/bytes"] == 2 * len(PAGE) + len(b"no robots.txt") + len(b"status 404")


def test_get_outside_async_with_is_refused():
    with pytest.raises(RuntimeError, match="async with"):
        asyncio.run(Fetcher(Settings()).get("http://127.0.0.1/"))


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("7", 7.0),
        (" 0 ", 0.0),
        (email.utils.formatdate(1_000_030, usegmt=True), 30.0),
        (email.utils.formatdate(999_000, usegmt=True), 0.0),  # a date in the past: no wait
        (email.utils.formatdate(1_000_030, usegmt=True).removesuffix(" GMT"), 30.0),  # no zone: GMT
        ("", None),
        (None, None),
        ("-5", None),
        ("1.5", None),
        ("²", None),  # a digit to str.isdigit, not to float
        ("tomorrow", None),
    ],
)
def test_retry_after_values(value, seconds):
    assert retry_after_seconds(value, now=1_000_000) == seconds
