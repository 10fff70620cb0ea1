"""The fetcher against misbehaving servers: each ends in a clear, logged outcome and the fetcher goes on."""

import gzip
import logging
import time
import tracemalloc
from collections import Counter

import pytest

from geoweb.errors import (
    BadResponse,
    BlockedAddress,
    ConnectionFailed,
    FetchError,
    FetchTimeout,
    InvalidURL,
    RobotsDisallowed,
    TooManyRedirects,
)
from geoweb.fetch import Response
from tests.hostile.servers import (
    CAPABILITIES,
    PAGE,
    BlackHole,
    HostileServer,
    RawServer,
    charset_page,
    fetch_each,
    loopback_settings,
)

CAP = 1_000_000


@pytest.fixture(scope="module")
def server():
    with HostileServer() as server:
        yield server


def fetch_timed(settings, url, **get_args):
    began = time.monotonic()
    [result] = fetch_each(settings, url, **get_args)
    return result, time.monotonic() - began


def failures_logged(caplog, url: str) -> int:
    return sum(1 for r in caplog.records if r.name.startswith("geoweb.fetch") and url in r.getMessage())


def test_stall_ends_in_a_read_timeout(server, caplog):
    caplog.set_level(logging.INFO)
    stats = Counter()
    url = server.url("/stall")
    result, elapsed = fetch_timed(loopback_settings(server, read_timeout=0.3), url, stats=stats)
    assert isinstance(result, FetchTimeout) and "read timeout" in str(result)
    assert result.url == url
    assert 0.3 <= elapsed < 1.0
    assert stats["fetch/timeout"] == 1
    assert failures_logged(caplog, url) == 1


def test_slow_drip_ends_at_the_total_timeout(server):
    # a byte every 50 ms never trips the read timeout; the total timeout ends it
    settings = loopback_settings(server, read_timeout=0.3, total_timeout=0.8)
    result, elapsed = fetch_timed(settings, server.url("/drip"))
    assert isinstance(result, FetchTimeout) and "total timeout" in str(result)
    assert 0.8 <= elapsed < 1.5


def test_a_connect_that_never_completes_ends_in_a_connect_timeout():
    with BlackHole() as hole:
        settings = loopback_settings(hole, connect_timeout=0.3, obey_robots=False)
        result, elapsed = fetch_timed(settings, hole.url("/"))
    assert isinstance(result, FetchTimeout) and "connect timeout" in str(result)
    assert elapsed < 1.0


def test_endless_body_stops_at_the_cap(server):
    stats = Counter()
    result, elapsed = fetch_timed(
        loopback_settings(server, max_body_bytes=CAP), server.url("/endless"), stats=stats
    )
    assert (len(result.body), result.complete) == (CAP, False)
    assert stats["fetch/truncated"] == 1
    assert elapsed < 1.0


def test_content_length_over_the_cap_is_not_read(server):
    stats = Counter()
    result, elapsed = fetch_timed(
        loopback_settings(server, max_body_bytes=CAP), server.url("/huge"), stats=stats
    )
    assert (result.status, result.body, result.complete) == (200, b"", False)
    assert result.content_length == 10**12  # the caller can still see what was announced
    assert stats["fetch/bytes"] == len(b"no robots.txt")  # nothing of the body
    assert elapsed < 1.0


def test_gzip_bomb_stops_at_the_cap_of_decoded_bytes(server):
    tracemalloc.start()
    try:
        result, elapsed = fetch_timed(loopback_settings(server, max_body_bytes=CAP), server.url("/gzip-bomb"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (len(result.body), result.complete) == (CAP, False)
    assert result.body == bytes(CAP)
    # a 64 KiB chunk decodes to 64 MiB: decoding whole chunks peaks above 200 MB, up to the cap about 10
    assert peak < 32 * CAP
    assert elapsed < 1.5


def test_redirect_loop(server):
    result, _ = fetch_timed(loopback_settings(server), server.url("/loop/a"))
    assert isinstance(result, TooManyRedirects) and "loop" in str(result)
    assert server.paths().count("/loop/a") == 1 and server.paths().count("/loop/b") == 1


def test_too_many_redirects(server):
    ok, too_many = fetch_each(loopback_settings(server), server.url("/chain/5"), server.url("/chain/6"))
    assert isinstance(ok, Response) and len(ok.redirects) == 5
    assert isinstance(too_many, TooManyRedirects)


@pytest.mark.parametrize(
    "target",
    [
        "http://localhost:{port}/ok",  # a name resolving to loopback
        "http://127.0.0.2:{port}/ok",  # another loopback address
        "http://[::ffff:127.0.0.1]:{port}/ok",  # the IPv4-mapped form of the allowed address
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    ],
)
def test_a_redirect_from_an_allowed_host_to_a_private_address_is_blocked(server, caplog, target):
    caplog.set_level(logging.INFO)
    with HostileServer() as other:
        location = target.format(port=other.port)
        stats = Counter()
        url = server.url(f"/redirect?to={location}")
        result, _ = fetch_timed(loopback_settings(server), url, stats=stats)
    assert isinstance(result, BlockedAddress)
    assert other.seen == []  # never reached
    assert stats["guard/blocked"] == 1 and stats["fetch/blocked_address"] == 1
    assert [r.levelname for r in caplog.records if url in r.getMessage()] == ["WARNING"]


def test_a_private_address_is_blocked_without_allowed_hosts(server):
    result, _ = fetch_timed(loopback_settings(), server.url("/ok"))
    assert isinstance(result, BlockedAddress)


def test_robots_disallow_means_the_page_is_never_requested():
    with HostileServer(robots="User-agent: *\nDisallow: /ok\n") as site:
        stats = Counter()
        [result] = fetch_each(loopback_settings(site), site.url("/ok"), stats=stats)
    assert isinstance(result, RobotsDisallowed)
    assert site.paths() == ["/robots.txt"]
    assert stats["robots/forbidden"] == 1


def test_429_with_a_short_retry_after_is_retried_after_that_wait(server):
    stats = Counter()
    settings = loopback_settings(server, max_retry_after=2.0)
    url = server.url("/flaky/429?key=retry-after&fail=1&retry_after=1")
    result, elapsed = fetch_timed(settings, url, stats=stats)
    assert isinstance(result, Response) and result.status == 200 and result.body == PAGE
    attempts = [seen.time for seen in server.seen if seen.path.startswith("/flaky/429?key=retry-after")]
    assert len(attempts) == 2 and 0.99 <= attempts[1] - attempts[0] < 2.0
    assert stats["fetch/retries"] == 1
    assert elapsed < 2.5


def test_a_retry_after_longer_than_the_cap_is_not_waited_for(server):
    """A tarpit's "come back in an hour": the 429 stands at once, and the crawl's host budget counts it."""
    stats = Counter()
    settings = loopback_settings(server, max_retry_after=0.3)
    url = server.url("/flaky/429?key=tarpit&fail=1&retry_after=3600")
    result, elapsed = fetch_timed(settings, url, stats=stats)
    assert isinstance(result, Response) and result.status == 429
    assert len([s for s in server.seen if s.path.startswith("/flaky/429?key=tarpit")]) == 1
    assert stats["fetch/retry_after_refused"] == 1 and stats["fetch/retries"] == 0
    assert elapsed < 0.5


def test_503_then_200(server):
    stats = Counter()
    result, _ = fetch_timed(loopback_settings(server), server.url("/flaky/503?key=503&fail=1"), stats=stats)
    assert isinstance(result, Response) and result.status == 200
    assert stats["fetch/status/503"] == 1 and stats["fetch/retries"] == 1


def test_a_lasting_5xx_is_returned_after_the_retries(server):
    stats = Counter()
    result, _ = fetch_timed(loopback_settings(server, retries=2), server.url("/status/502"), stats=stats)
    assert isinstance(result, Response) and result.status == 502
    assert stats["fetch/status/502"] == 3


@pytest.mark.parametrize("codec", ["windows-1251", "shift_jis", "koi8-r"])
def test_a_non_utf8_page_is_decoded_with_its_declared_charset(server, codec):
    [result] = fetch_each(loopback_settings(server), server.url(f"/charset/{codec}"))
    assert result.text() == charset_page(codec)
    assert result.body != charset_page(codec).encode()  # it really was not UTF-8


def test_a_wrong_content_type_passes_through_untouched(server):
    [result] = fetch_each(loopback_settings(server), server.url("/wrong-type"))
    assert result.content_type == "image/png"
    assert result.body == CAPABILITIES


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b"garbage\r\n\r\n", "Bad status line"),
        (b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 20_000 + b"\r\n\r\n", "8190 bytes"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "Content-Length"),
    ],
)
def test_a_malformed_response_is_a_fetch_error(payload, expected):
    with RawServer(payload) as raw:
        [result] = fetch_each(loopback_settings(raw, obey_robots=False), raw.url("/"))
    assert type(result) is BadResponse and result.reason == "bad_response" and expected in str(result)
    assert raw.connections == 1  # not retried


def test_a_body_shorter_than_its_content_length_is_kept_and_marked():
    with RawServer(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789") as raw:
        stats = Counter()
        [result] = fetch_each(loopback_settings(raw, obey_robots=False), raw.url("/"), stats=stats)
    assert (result.body, result.complete) == (b"0123456789", False)
    assert stats["fetch/incomplete"] == 1


@pytest.mark.parametrize(
    "body",
    [b"\x1f\x8b\x08\x00garbage-not-deflate", b"\x1f\x8b" + b"\x00" * 30, b"plain text, gzip declared"],
)
def test_a_broken_gzip_body_is_marked_incomplete(body):
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body)
    with RawServer(head + body) as raw:
        stats = Counter()
        [result] = fetch_each(loopback_settings(raw, obey_robots=False), raw.url("/"), stats=stats)
    assert isinstance(result, Response) and result.complete is False
    assert stats["fetch/incomplete"] == 1


def test_broken_compression_is_fetched_again_uncompressed(server):
    stats = Counter()
    [result] = fetch_each(loopback_settings(server), server.url("/broken-gzip"), stats=stats)
    assert (result.body, result.complete) == (PAGE, True)
    assert stats["fetch/undecodable"] == 1 and stats["fetch/incomplete"] == 0
    asked = [s.headers.get("Accept-Encoding") for s in server.seen if s.path == "/broken-gzip"]
    assert asked == ["gzip, deflate", "identity"]


def test_a_whole_gzip_body_under_a_wrong_content_length_is_complete():
    """pycsw 2.6's bug: a whole gzip body under the Content-Length of the uncompressed document."""
    document = PAGE * 50
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(document)
    with RawServer(head + gzip.compress(document), hold=5.0) as raw:
        stats = Counter()
        started = time.monotonic()
        [result] = fetch_each(loopback_settings(raw, obey_robots=False), raw.url("/"), stats=stats)
        waited = time.monotonic() - started
    assert (result.body, result.complete) == (document, True)
    assert waited < 1.0  # read up to the gzip trailer, not until the server hangs up
    assert stats["fetch/incomplete"] == 0


def test_a_gzip_stream_cut_short_is_marked_incomplete():
    body = gzip.compress(PAGE * 100)[:-20]
    head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body)
    with RawServer(head + body) as raw:
        [result] = fetch_each(loopback_settings(raw, obey_robots=False), raw.url("/"))
    assert result.complete is False
    assert PAGE in result.body  # what could be decoded is kept


def test_a_server_that_hangs_up_is_a_connection_failure_after_retries(caplog):
    caplog.set_level(logging.INFO)
    with RawServer(b"") as raw:
        stats = Counter()
        url = raw.url("/")
        [result] = fetch_each(loopback_settings(raw, obey_robots=False, retries=2), url, stats=stats)
    assert isinstance(result, ConnectionFailed)
    assert stats["fetch/retries"] == 2 and stats["fetch/connection"] == 1
    assert failures_logged(caplog, url) == 1


def test_tls_to_a_plain_http_server_fails_without_retries(server):
    stats = Counter()
    url = server.url("/ok").replace("http://", "https://")
    [result] = fetch_each(loopback_settings(server, obey_robots=False, retries=2), url, stats=stats)
    assert isinstance(result, ConnectionFailed) and "SSL" in str(result)
    assert stats["fetch/retries"] == 0


def test_a_refused_connection_is_a_connection_failure():
    with BlackHole() as hole:
        port = hole.port
    # the port is closed now: nothing listens
    settings = loopback_settings(hole, obey_robots=False, retries=1)
    [result] = fetch_each(settings, f"http://127.0.0.1:{port}/")
    assert isinstance(result, ConnectionFailed)


@pytest.mark.parametrize(
    "url",
    [
        "",
        "ftp://127.0.0.1/",
        "javascript:alert(1)",
        "http://",
        "http://[::1",
        "http://127.0.0.1:99999/",
        "/relative",
    ],
)
def test_a_url_that_is_not_http_is_refused(server, url):
    [result] = fetch_each(loopback_settings(server), url)
    assert type(result) is InvalidURL
    assert result.url == url


@pytest.mark.parametrize("location", ["file:///etc/passwd", "gopher://127.0.0.1:70/", "http://[::1"])
def test_a_redirect_to_a_bad_url_is_refused(server, location):
    [result] = fetch_each(loopback_settings(server), server.url(f"/redirect?to={location}"))
    assert type(result) is InvalidURL


def test_one_bad_server_loses_nothing_else(server, caplog):
    caplog.set_level(logging.INFO)
    urls = [
        server.url(p) for p in ("/stall", "/gzip-bomb", "/loop/a", "/ok", "/huge", "/status/404", "/drip")
    ]
    urls.append("http://127.0.0.2/")
    settings = loopback_settings(server, read_timeout=0.3, total_timeout=0.8, max_body_bytes=CAP)
    results = dict(zip(urls, fetch_each(settings, *urls, concurrent=True), strict=True))
    assert results[server.url("/ok")].body == PAGE
    assert results[server.url("/status/404")].status == 404
    assert results[server.url("/gzip-bomb")].complete is False
    assert results[server.url("/huge")].complete is False
    assert isinstance(results[server.url("/stall")], FetchTimeout)
    assert isinstance(results[server.url("/drip")], FetchTimeout)
    assert isinstance(results[server.url("/loop/a")], TooManyRedirects)
    assert isinstance(results["http://127.0.0.2/"], BlockedAddress)
    for url, result in results.items():
        assert failures_logged(caplog, url) == (
            1 if isinstance(result, FetchError) or not result.complete else 0
        )
