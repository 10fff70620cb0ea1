"""The fetcher times each response: time to first byte (headers received), total time (body read) and the
bytes received, on every response it returns, a redirect chain's last hop included."""

from __future__ import annotations

import pytest

from geoweb.fetch import Response
from tests.harvest.delayed import DelayedPagesServer
from tests.hostile.servers import PAGE, HostileServer, fetch_each, loopback_settings

BODY = b"<doc>" + b"x" * 10_000 + b"</doc>"


@pytest.fixture
def server():
    with DelayedPagesServer({"/doc": ("text/xml", BODY)}) as server:
        yield server


def test_first_byte_and_total_time_follow_the_server_s_delays(server):
    settings = loopback_settings(server)
    [fast] = fetch_each(settings, server.url("/doc"))
    server.first_byte_delay, server.body_delay = 0.2, 0.15
    [slow] = fetch_each(settings, server.url("/doc"))
    assert fast.body == slow.body == BODY
    assert fast.timing.first_byte_seconds < 0.1 and fast.timing.total_seconds < 0.1
    assert 0.2 <= slow.timing.first_byte_seconds < 0.3
    assert slow.timing.total_seconds >= slow.timing.first_byte_seconds + 0.15
    assert fast.timing.bytes == slow.timing.bytes == len(BODY)


def test_error_statuses_and_a_redirect_chain_s_last_hop_are_timed():
    with HostileServer() as hostile:
        settings = loopback_settings(hostile, retries=0)
        chained, missing = fetch_each(settings, hostile.url("/chain/2"), hostile.url("/status/404"))
    assert isinstance(chained, Response) and chained.body == PAGE
    assert (
        chained.timing.bytes == len(PAGE)
        and chained.timing.total_seconds >= chained.timing.first_byte_seconds
    )
    assert missing.status == 404 and missing.timing.bytes == len(b"status 404")


def test_bytes_count_what_was_sent_compressed_and_what_was_streamed():
    with HostileServer() as hostile:
        settings = loopback_settings(hostile)
        [gzipped] = fetch_each(settings, hostile.url("/encoded/gzip"))
        [tail] = fetch_each(settings, hostile.url("/bytes/131072"), max_bytes=1024, tail=True)
    assert gzipped.body == PAGE and 0 < gzipped.timing.bytes != len(PAGE)
    assert len(tail.body) == 1024 and tail.timing.bytes == 131072
