"""A small web of two hosts on loopback, served from a thread (the harvest steps run their own event loops).

Host A has a robots.txt closing /private/, a 404, a PDF link, and a list page of 120 KML files (a level big
enough for several commit batches); host B a WMS and a link back to A's KML. Every request is counted.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from pathlib import Path

from aiohttp import web

CAPABILITIES = Path(__file__).parents[1] / "data" / "capabilities"
WMS_CAPABILITIES = (CAPABILITIES / "mapserver_wms_130.xml").read_bytes()
KML = """<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>{name}</name>
<Placemark><name>{name}</name><Point><coordinates>{x},50.0</coordinates></Point></Placemark>
</Document></kml>"""
LIST_SIZE = 120


def kml(name: str) -> web.Response:
    text = KML.format(name=name, x=len(name))
    return web.Response(text=text, content_type="application/vnd.google-earth.kml+xml")


def html(*links: str) -> web.Response:
    body = "".join(f'<a href="{href}">{href}</a>\n' for href in links)
    return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")


class LoopbackWeb:
    """Hosts A and B on 127.0.0.1; use as a context manager. ``requests[(host, path_qs)]`` counts requests."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.ports: dict[str, int] = {}
        self.loop = asyncio.new_event_loop()
        self._runners: list[web.AppRunner] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._ready = threading.Event()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.ports[host]}{path}"

    @property
    def allowed_hosts(self) -> list[str]:
        return [f"127.0.0.1:{port}" for port in self.ports.values()]

    def fetched(self, host: str) -> Counter[str]:
        """Requests per path of one host, robots.txt left out (each crawl task reads it once per host)."""
        return Counter({p: n for (h, p), n in self.requests.items() if h == host and p != "/robots.txt"})

    def __enter__(self) -> LoopbackWeb:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the loopback web did not start")
        return self

    def __exit__(self, *exc_info) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start())
        self._ready.set()
        self.loop.run_forever()
        for runner in self._runners:
            self.loop.run_until_complete(runner.cleanup())
        self.loop.close()

    async def _start(self) -> None:
        for host, handler in (("A", self._host_a), ("B", self._host_b)):
            app = web.Application()
            app.router.add_route("GET", "/{tail:.*}", self._counted(host, handler))
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self._runners.append(runner)
            self.ports[host] = site._server.sockets[0].getsockname()[1]

    def _counted(self, host: str, handler):
        async def handle(request: web.Request) -> web.StreamResponse:
            self.requests[(host, request.path_qs)] += 1
            return handler(request)

        return handle

    def _host_a(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/robots.txt":
            return web.Response(text="User-agent: *\nDisallow: /private/\n")
        if path == "/":
            return html("/list.html", "/a1.html", self.url("B"), "/private/x.html", "/missing.html", "/x.pdf")
        if path == "/a1.html":
            return html("/files/one.kml", "/deep/a2.html", self.url("B", "/b1.html"), "/")
        if path == "/deep/a2.html":
            return html("/files/deep.kml")
        if path == "/list.html":
            return html(*(f"/files/p{i}.kml" for i in range(LIST_SIZE)))
        if path.startswith("/files/") and path.endswith(".kml"):
            return kml(path.rsplit("/", 1)[1])
        return web.Response(status=404, text="not found")

    def _host_b(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path == "/":
            return html("/b1.html", "/wms?SERVICE=WMS&REQUEST=GetCapabilities", self.url("A", "/a1.html"))
        if path == "/b1.html":
            return html(self.url("A", "/files/one.kml"), "/files/b.kml")
        if path == "/wms" and request.query.get("SERVICE", request.query.get("service", "")).upper() == "WMS":
            return web.Response(body=WMS_CAPABILITIES, content_type="text/xml")
        if path == "/files/b.kml":
            return kml("b.kml")
        return web.Response(status=404, text="not found")
