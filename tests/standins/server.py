"""The base of the web-search and data-portal stand-ins: one aiohttp app on loopback, served from a thread
(the connectors are synchronous), that logs every request and answers injected faults.

    with SearXNGStandin() as searxng:
        searxng.results["web map service"] = web_pages(25)
        searxng.fail(page=3, kind="server")
        SearXNG(searxng.config()).records(query="web map service")

A subclass routes ``path`` to ``answer``, says which result page a request asks for (``page_of``) and how it
answers a fault (``fault``). Faults every stand-in speaks: ``quota`` (the provider's quota or rate-limit
refusal), ``server`` (a 5xx), ``malformed`` (a 200 whose JSON is cut short); some add their own.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TRUNCATED = '{"results": [{"url": "https://example.org/a", "title": "cut'  # JSON cut mid-answer


@dataclass(frozen=True)
class Seen:
    """A request the stand-in received."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names

    @property
    def url_text(self) -> str:
        """The request's path and query as one string (what a log line would show)."""
        return self.path + "?" + "&".join(f"{k}={v}" for k, v in self.query.items())


@dataclass(frozen=True)
class Hit:
    """A web page a search stand-in can return; each stand-in writes it in its own format."""

    url: str
    title: str
    snippet: str
    media_type: str | None = None


def web_pages(count: int, base: str = "https://maps.example.org") -> list[Hit]:
    """``count`` distinct pages: capabilities URLs, map pages and, every seventh, a KML file."""
    hits = []
    for i in range(count):
        if i % 7 == 6:
            hits.append(
                Hit(
                    f"{base}/files/layer{i}.kml",
                    f"Layer {i} (KML)",
                    f"KML download {i}",
                    "application/vnd.google-earth.kml+xml",
                )
            )
        elif i % 2:
            hits.append(
                Hit(f"{base}/wms{i}?service=WMS&request=GetCapabilities", f"WMS {i}", f"web map service {i}")
            )
        else:
            hits.append(Hit(f"{base}/maps/page{i}.html", f"Map page {i}", f"Maps of region {i}"))
    return hits


class Standin:
    """An outside API on loopback. ``url`` is its base URL once started; ``requests`` lists what it received."""

    path = "/"

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.port = 0
        self._faults: dict[int, list[Any]] = {}  # page -> [kind, times left (None: always)]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def fail(self, page: int, kind: str, times: int | None = None) -> None:
        """Answer result page ``page`` with fault ``kind``, ``times`` times (None: every time)."""
        self._faults[page] = [kind, times]

    def reset(self) -> None:
        """Forget faults and requests (the data stays)."""
        self._faults.clear()
        self.requests.clear()

    def page_of(self, request: web.Request) -> int:
        raise NotImplementedError

    async def answer(self, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        return self

    def __exit__(self, *exc_info) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_route("GET", self.path, self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            Seen(request.path, dict(request.query), {k.lower(): v for k, v in request.headers.items()})
        )
        fault = self._faults.get(self.page_of(request))
        if fault is not None and fault[1] != 0:
            if fault[1] is not None:
                fault[1] -= 1
            return self.fault(fault[0], request)
        return await self.answer(request)


def truncated_json() -> web.Response:
    return web.Response(text=TRUNCATED, content_type="application/json")


def bad_gateway() -> web.Response:
    """A 502 from the load balancer in front of an API: HTML, not the API's own error format."""
    body = "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>"
    return web.Response(status=502, text=body, content_type="text/html")
