"""Misbehaving loopback HTTP servers for hostile tests.

Each server runs on its own event loop in a daemon thread, so sync code and any event loop can use it:

    with HostileServer() as server:
        asyncio.run(fetch(server.url("/stall")))
        assert server.paths() == ["/robots.txt", "/stall"]

``HostileServer`` endpoints (every request is recorded in ``seen``):

    /ok                          a small HTML page
    /stall                       accepts the request, then sends nothing
    /drip                        headers, then one byte every 50 ms, for minutes
    /endless                     a chunked body that never ends
    /huge                        declares a 1 TB Content-Length, then sends data until the client leaves
    /gzip-bomb                   an endless gzip stream of zeros (about 1000:1, 64 MiB a chunk)
    /encoded/{gzip|deflate|raw-deflate}   the /ok page, compressed as named
    /redirect?to=URL[&status=N]  a redirect to URL
    /chain/{n}                   n redirects (/chain/n-1 ... /chain/0), then a page
    /loop/{a|b}                  /loop/a -> /loop/b -> /loop/a ...
    /status/{code}[?retry_after=V]     that status, with a Retry-After header when asked
    /flaky/{code}?key=K&fail=N[&retry_after=V]   ``code`` N times per key K, then 200
    /charset/{codec}             Cyrillic and Japanese text in that codec, declared in Content-Type
    /wrong-type                  a WMS capabilities document served as image/png
    /bytes/{n}                   n bytes (0, 1 ... 255 repeated; n a multiple of 256), Range answered 206
    /robots.txt                  ``robots``: text (200), a status, (status, headers) or None (404)

``PagesServer`` serves fixed documents by path (a site linking to the hostile endpoints);
``RawServer`` answers every connection with fixed bytes (broken status lines, headers, bodies);
``BlackHole`` is a port whose connects never complete. ``loopback_settings`` and ``fetch_each`` run the
fetcher against them.
"""

from __future__ import annotations

import asyncio
import gzip
import itertools
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from aiohttp import web

from geoweb.errors import FetchError
from geoweb.fetch import Fetcher, Response
from geoweb.settings import Settings

PAGE = b"<html><head><title>ok</title></head><body><a href='/next'>next</a></body></html>"
CHARSET_TEXT = "Карта России, 地図の一覧"
CAPABILITIES = b"""<?xml version="1.0"?>
<WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms">
  <Service><Name>WMS</Name><Title>Wrongly typed</Title></Service>
  <Capability><Request><GetCapabilities/></Request></Capability>
</WMS_Capabilities>
"""
_LONG = 600.0  # "forever" for a test


@dataclass(frozen=True, slots=True)
class Seen:
    """One request as the server received it."""

    path: str  # path and query
    headers: dict[str, str]
    time: float  # time.monotonic() on arrival


def charset_page(codec: str) -> str:
    """The page /charset/{codec} serves: CHARSET_TEXT without the characters the codec cannot write."""
    text = "".join(c for c in CHARSET_TEXT if c.encode(codec, "ignore"))
    return f"<html><body><p>{text}</p></body></html>"


async def _stream(
    request: web.Request, response: web.StreamResponse, chunks: Iterable[bytes], pause: float = 0.0
) -> web.StreamResponse:
    await response.prepare(request)
    try:
        for chunk in chunks:
            await response.write(chunk)
            if pause:
                await asyncio.sleep(pause)
    except ConnectionError:
        pass  # the client went away: how these endpoints usually end
    return response


def _gzip_zeros() -> Iterator[bytes]:
    """An endless gzip stream of zeros: each chunk is about 64 KiB on the wire and 64 MiB decoded."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    yield compressor.compress(b"") + compressor.flush(zlib.Z_FULL_FLUSH)  # the gzip header alone
    # after a full flush a segment refers to nothing before it, so it can be repeated as is
    segment = compressor.compress(bytes(1024 * 1024)) + compressor.flush(zlib.Z_FULL_FLUSH)
    chunk = segment * 64
    while True:
        yield chunk


class _BackgroundServer:
    """Runs the server's ``_start``/``_stop`` coroutines on a private loop in a daemon thread."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        return self

    def __exit__(self, *exc_info) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def hostport(self) -> str:
        """The ``host:port`` form ``Settings.allowed_hosts`` takes."""
        return f"{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def _listen(self) -> socket.socket:
        sock = socket.socket()
        sock.bind((self.host, 0))
        self.port = sock.getsockname()[1]
        return sock

    async def _start(self) -> None:
        raise NotImplementedError

    async def _stop(self) -> None:
        raise NotImplementedError


class HostileServer(_BackgroundServer):
    """An aiohttp server with the misbehaving endpoints listed in the module docstring."""

    def __init__(self, *, robots: str | int | tuple[int, dict] | None = None, host: str = "127.0.0.1"):
        super().__init__(host)
        self.robots = robots
        self.seen: list[Seen] = []
        self._failures: dict[str, int] = {}
        self._runner: web.AppRunner | None = None

    def paths(self) -> list[str]:
        return [s.path for s in self.seen]

    async def _start(self) -> None:
        app = web.Application(middlewares=[self._record])
        app.router.add_routes(
            [
                web.get("/ok", self._ok),
                web.get("/stall", self._stall),
                web.get("/drip", self._drip),
                web.get("/endless", self._endless),
                web.get("/huge", self._huge),
                web.get("/gzip-bomb", self._gzip_bomb),
                web.get("/encoded/{encoding}", self._encoded),
                web.get("/broken-gzip", self._broken_gzip),
                web.get("/redirect", self._redirect),
                web.get("/chain/{n:\\d+}", self._chain),
                web.get("/loop/{name}", self._loop_redirect),
                web.get("/status/{code:\\d+}", self._status),
                web.get("/flaky/{code:\\d+}", self._flaky),
                web.get("/charset/{codec}", self._charset),
                web.get("/wrong-type", self._wrong_type),
                web.get("/bytes/{n:\\d+}", self._bytes),
                web.get("/robots.txt", self._robots),
            ]
        )
        self._runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._listen()).start()

    async def _stop(self) -> None:
        await self._runner.cleanup()

    @web.middleware
    async def _record(self, request: web.Request, handler):
        self.seen.append(Seen(request.path_qs, dict(request.headers), time.monotonic()))
        return await handler(request)

    async def _ok(self, request: web.Request) -> web.Response:
        return web.Response(body=PAGE, content_type="text/html")

    async def _stall(self, request: web.Request) -> web.Response:
        await asyncio.sleep(_LONG)
        return web.Response(body=PAGE)

    async def _drip(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        return await _stream(request, response, itertools.repeat(b"x", int(_LONG / 0.05)), pause=0.05)

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        return await _stream(request, web.StreamResponse(), itertools.repeat(b"x" * 65536))

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/zip"})
        response.content_length = 10**12
        return await _stream(request, response, itertools.repeat(b"PK" * 32768))

    async def _gzip_bomb(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/xml", "Content-Encoding": "gzip"})
        return await _stream(request, response, _gzip_zeros())

    async def _encoded(self, request: web.Request) -> web.Response:
        encoding = request.match_info["encoding"]
        if encoding == "gzip":
            body = gzip.compress(PAGE)
        elif encoding == "deflate":
            body = zlib.compress(PAGE)
        else:  # raw-deflate: what many servers send as "deflate"
            compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            body = compressor.compress(PAGE) + compressor.flush()
        content_encoding = "gzip" if encoding == "gzip" else "deflate"
        return web.Response(
            body=body, headers={"Content-Type": "text/html", "Content-Encoding": content_encoding}
        )

    async def _broken_gzip(self, request: web.Request) -> web.Response:
        """pycsw 2.6's bug: a gzip body cut short, unless the client asks for the identity encoding."""
        if request.headers.get("Accept-Encoding", "").strip() == "identity":
            return web.Response(body=PAGE, content_type="text/html")
        return web.Response(
            body=gzip.compress(PAGE)[:-12], headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}
        )

    async def _redirect(self, request: web.Request) -> web.Response:
        status = int(request.query.get("status", "302"))
        return web.Response(status=status, headers={"Location": request.query["to"]})

    async def _chain(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n == 0:
            return await self._ok(request)
        return web.Response(status=301, headers={"Location": f"/chain/{n - 1}"})

    async def _loop_redirect(self, request: web.Request) -> web.Response:
        other = "b" if request.match_info["name"] == "a" else "a"
        return web.Response(status=302, headers={"Location": f"/loop/{other}"})

    async def _status(self, request: web.Request) -> web.Response:
        return self._error(int(request.match_info["code"]), request.query.get("retry_after"))

    async def _flaky(self, request: web.Request) -> web.Response:
        key = request.query["key"]
        self._failures[key] = failures = self._failures.get(key, 0) + 1
        if failures <= int(request.query.get("fail", "1")):
            return self._error(int(request.match_info["code"]), request.query.get("retry_after"))
        return await self._ok(request)

    @staticmethod
    def _error(code: int, retry_after: str | None) -> web.Response:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        return web.Response(status=code, text=f"status {code}", headers=headers)

    async def _charset(self, request: web.Request) -> web.Response:
        codec = request.match_info["codec"]
        body = charset_page(codec).encode(codec)
        return web.Response(body=body, headers={"Content-Type": f"text/html; charset={codec}"})

    async def _wrong_type(self, request: web.Request) -> web.Response:
        return web.Response(body=CAPABILITIES, headers={"Content-Type": "image/png"})

    async def _bytes(self, request: web.Request) -> web.Response:
        body = bytes(range(256)) * (int(request.match_info["n"]) // 256)
        if "Range" not in request.headers:
            return web.Response(body=body, content_type="application/octet-stream")
        start, stop, _ = request.http_range.indices(len(body))
        content_range = f"bytes {start}-{stop - 1}/{len(body)}"
        return web.Response(status=206, body=body[start:stop], headers={"Content-Range": content_range})

    async def _robots(self, request: web.Request) -> web.Response:
        if self.robots is None:
            return web.Response(status=404, text="no robots.txt")
        if isinstance(self.robots, str):
            return web.Response(text=self.robots)
        status, headers = (self.robots, {}) if isinstance(self.robots, int) else self.robots
        return web.Response(status=status, text=f"status {status}", headers=headers)


class PagesServer(_BackgroundServer):
    """Serves ``pages``: path -> (content type, body); 404 elsewhere. Every request is recorded in ``seen``."""

    def __init__(self, pages: dict[str, tuple[str, bytes]], host: str = "127.0.0.1"):
        super().__init__(host)
        self.pages = pages
        self.seen: list[str] = []
        self._runner: web.AppRunner | None = None

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/{path:.*}", self._page)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._listen()).start()

    async def _stop(self) -> None:
        await self._runner.cleanup()

    async def _page(self, request: web.Request) -> web.Response:
        self.seen.append(request.path_qs)
        if request.path not in self.pages:
            return web.Response(status=404)
        content_type, body = self.pages[request.path]
        return web.Response(body=body, headers={"Content-Type": content_type})


class RawServer(_BackgroundServer):
    """Answers every connection with ``payload`` after the request head, then closes it."""

    def __init__(self, payload: bytes, host: str = "127.0.0.1", *, hold: float = 0.0):
        super().__init__(host)
        self.payload = payload
        self.hold = hold  # seconds the connection stays open after the payload, as keep-alive servers do
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._answer, sock=self._listen())

    async def _stop(self) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(self.payload)
            await writer.drain()
            if self.hold:  # until the client hangs up, or the hold ends
                await asyncio.wait_for(reader.read(), self.hold)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client left first
        finally:
            writer.close()


class BlackHole:
    """A loopback port that accepts no connection: its backlog is full, so connects hang until they time out."""

    def __init__(self, host: str = "127.0.0.1"):
        self.host = host
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> BlackHole:
        listener = socket.socket()
        listener.bind((self.host, 0))
        listener.listen(0)
        self.port = listener.getsockname()[1]
        self._sockets.append(listener)
        for _ in range(4):  # more than the backlog holds
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex((self.host, self.port))
            self._sockets.append(filler)
        return self

    def __exit__(self, *exc_info) -> None:
        for sock in self._sockets:
            sock.close()

    @property
    def hostport(self) -> str:
        return f"{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return f"http://{self.hostport}{path}"


def loopback_settings(*servers, **changes) -> Settings:
    """Settings that may reach ``servers`` (only them on loopback), with timeouts short enough for tests."""
    base = Settings(
        allowed_hosts=frozenset(server.hostport for server in servers),
        connect_timeout=0.5,
        read_timeout=0.5,
        total_timeout=1.5,
        retries=1,
        retry_backoff=0.01,
    )
    return base.with_(**changes)


def fetch_each(
    settings: Settings, *urls: str, stats: Counter | None = None, concurrent: bool = False, **get_args
) -> list[Response | FetchError]:
    """Fetch ``urls`` with one fetcher, in order or all at once; a failure is returned, not raised."""

    async def run() -> list[Response | FetchError]:
        async with Fetcher(settings, stats=stats) as fetcher:

            async def one(url: str) -> Response | FetchError:
                try:
                    return await fetcher.get(url, **get_args)
                except FetchError as exc:
                    return exc

            if concurrent:
                return list(await asyncio.gather(*(one(url) for url in urls)))
            return [await one(url) for url in urls]

    return asyncio.run(run())
