"""A revisit checks each host one check at a time and the hosts at once: two slow hosts of due WMS (each
check a GetCapabilities and a GetMap), with two requests in flight allowed per host."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from aiohttp import web

from geoweb.harvest.revisit import _check_all
from geoweb.models import CheckResult, Due, ScheduleState
from tests.hostile.politeness import peak_in_flight
from tests.hostile.servers import PagesServer, loopback_settings

CAPABILITIES = (Path(__file__).parents[1] / "data" / "capabilities" / "mapserver_wms_130.xml").read_bytes()
SERVICES = 4  # per host
ANSWER_SECONDS = 0.2


class SlowWMS(PagesServer):
    """WMS endpoints /wms0.. answering their capabilities, and a GetMap with an exception report, each after
    ANSWER_SECONDS; every request's (path and query, arrival, end) in ``spans``."""

    def __init__(self):
        super().__init__({})
        self.spans: list[tuple[str, float, float]] = []

    async def _page(self, request: web.Request) -> web.Response:
        if request.path == "/robots.txt":
            return web.Response(status=404)
        arrival = time.monotonic()
        await asyncio.sleep(ANSWER_SECONDS)
        self.spans.append((request.path_qs, arrival, time.monotonic()))
        if request.query.get("REQUEST", request.query.get("request", "")).lower() == "getmap":
            return web.Response(text="<ServiceExceptionReport/>", content_type="application/vnd.ogc.se_xml")
        return web.Response(body=CAPABILITIES, content_type="text/xml")


def test_a_hosts_checks_follow_each_other_while_the_hosts_are_checked_at_once():
    with SlowWMS() as one, SlowWMS() as two:
        settings = loopback_settings(one, two, per_host_concurrency=2)
        due = [
            Due(n * 10 + i, server.url(f"/wms{i}"), "WMS", "1.3.0", None, ScheduleState(3600.0))
            for n, server in enumerate((one, two))
            for i in range(SERVICES)
        ]
        results: list[CheckResult] = []
        asyncio.run(_check_all(due, settings, results.append, operations=True))
        spans = {"one": list(one.spans), "two": list(two.spans)}

    assert len(results) == 2 * SERVICES and {r.outcome for r in results} == {"unchanged"}
    assert {r.operation_check.operation for r in results} == {"GetMap"}
    for host in spans.values():
        assert len(host) == 2 * SERVICES  # a capabilities and a GetMap a check
        assert peak_in_flight([(start, end) for _, start, end in host]) == 1
        # each check's GetMap comes right after its capabilities
        paths = [path for path, _, _ in sorted(host, key=lambda span: span[1])]
        assert [path.split("?")[0] for path in paths] == [f"/wms{i // 2}" for i in range(2 * SERVICES)]
    both = [(start, end) for host in spans.values() for _, start, end in host]
    assert peak_in_flight(both) == 2  # the two hosts at once
