"""A web as big as the paper's crawl, generated on the fly: millions of pages over up to 16,000 loopback hosts,
computed from their address and path on every request, so nothing is written to disk.

Host ``h`` is ``http://127.1.<h // 250>.<h % 250 + 1>:PORT``. Page ``i`` of a host is a pure function of
(seed, host, i): its tree children on the host (the fanout of ``synthetic_web.tree_fanout``, so a crawl from
the roots reaches every page within five levels), a link home, and two or three links to random pages, one
in five on another host. That gives about 4.8 links per page, so about 79 % of the links a crawl meets lead
to pages it has already seen: the redundancy of the paper's crawl (9.9 million URLs met, 2.1 million
unique). Every host has a robots.txt disallowing ``/private/``, which 3 % of pages link to; a few hosts are
slow (every response after ``slow_seconds``); a few pages link real capabilities documents (the corpus the
services-heavy synthetic web serves) and a KML file, to be found among the millions. Hosts of even number
send validators, as a stock web server does for a file: an ETag and a Last-Modified on every page, and a 304
without a body to a request whose If-None-Match names the ETag or whose If-Modified-Since is not older;
hosts of odd number send none and answer every GET whole.

The server is one asyncio process speaking just enough HTTP/1.1 (keep-alive, GET and HEAD) to cost a few
microseconds per response. It keeps its own account, read at ``/__stats`` on any host (never linked): requests,
distinct pages served (a bitmap), robots.txt and disallowed fetches, documents served, 304s, and the bytes of
the bodies sent.

    python -m bench.big_web --pages 2000000 --hosts 1000     # serve until killed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import signal
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from functools import cached_property

from bench.synthetic_web import PRIVATE_DIR, WORDS, capabilities_documents, page_path, tree_fanout

PORT = 18400
STATS_PATH = "/__stats"
DOCUMENTS_DIR = "/documents/"
MAX_HEAD = 16 * 1024  # bytes of request head a connection may send before it is closed
_PAGE = re.compile(r"^/s\d+/p(\d+)\.html$")
LAST_MODIFIED = "Mon, 08 Aug 2016 00:00:00 GMT"  # of every page of a host that sends validators
_LAST_MODIFIED_AT = parsedate_to_datetime(LAST_MODIFIED)
_CONDITIONS = re.compile(rb"^(if-none-match|if-modified-since):[ \t]*(.*?)[ \t]*$", re.I | re.M)
_KML = b"""<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Gauging stations</name>
<Placemark><name>Station 1</name><Point><coordinates>5.1,52.1</coordinates></Point></Placemark>
</Document></kml>
"""


@dataclass(frozen=True, slots=True)
class BigWebSpec:
    pages: int = 2_000_000
    hosts: int = 1_000
    port: int = PORT
    seed: int = 20160808
    slow_hosts: int = 5  # the first hosts of every 200th: each answers after slow_seconds
    slow_seconds: float = 0.25
    documents: int = 20  # pages that link a real document, on as many hosts

    def __post_init__(self):
        if not 1 <= self.hosts <= 250 * 64:
            raise ValueError(
                f"hosts must be 1..16000 (loopback addresses 127.1.0.1-127.1.63.250), got {self.hosts}"
            )
        if self.pages < self.hosts:
            raise ValueError(f"need at least one page per host: pages={self.pages} < hosts={self.hosts}")

    def address(self, host: int) -> str:
        return f"127.1.{host // 250}.{host % 250 + 1}"

    def origin(self, host: int) -> str:
        return f"http://{self.address(host)}:{self.port}"

    def seeds(self) -> list[str]:
        return [self.origin(h) + "/" for h in range(self.hosts)]

    def allowed_hosts(self) -> list[str]:
        return [f"{self.address(h)}:{self.port}" for h in range(self.hosts)]

    def pages_of(self, host: int) -> int:
        return self.pages // self.hosts + (host < self.pages % self.hosts)

    def is_slow(self, host: int) -> bool:
        return host % 200 == 0 and host // 200 < self.slow_hosts

    def sends_validators(self, host: int) -> bool:
        return host % 2 == 0


@dataclass
class Stats:
    """What the server has answered; ``pages`` counts distinct pages, however often each was asked for."""

    requests: int = 0
    pages: int = 0
    repeated_pages: int = 0
    robots: int = 0
    disallowed: int = 0
    documents: int = 0
    not_found: int = 0
    not_modified: int = 0
    body_bytes: int = 0


@dataclass
class BigWeb:
    """Pages as functions of (host, index); ``seen`` has a bit per page of every host."""

    spec: BigWebSpec
    stats: Stats = field(default_factory=Stats)

    def __post_init__(self):
        self.fanout = [tree_fanout(self.spec.pages_of(h)) for h in range(self.spec.hosts)]
        self.offsets = [0]
        for h in range(self.spec.hosts):
            self.offsets.append(self.offsets[-1] + self.spec.pages_of(h))
        self.seen = bytearray((self.spec.pages + 7) // 8)
        names = sorted(capabilities_documents())
        self.document_names = [*names[: max(0, self.spec.documents - 1)], "stations.kml"]
        self.document_bodies = {n: b for n, b in capabilities_documents().items() if n in self.document_names}
        self.document_bodies["stations.kml"] = _KML
        rng = random.Random(self.spec.seed)
        self.paragraphs = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 90))).capitalize() + "."
            for _ in range(512)
        ]
        self.robots = f"User-agent: *\nDisallow: {PRIVATE_DIR}\n".encode()

    @cached_property
    def by_address(self) -> dict[str, int]:
        return {self.spec.address(h): h for h in range(self.spec.hosts)}

    def document_page(self, host: int) -> int | None:
        """The page of ``host`` that links a document (hosts 0, 50, 100... up to ``documents`` of them)."""
        if host % 50 or host // 50 >= len(self.document_names):
            return None
        return self.spec.pages_of(host) // 3

    def links(self, host: int, index: int) -> list[tuple[int, int]]:
        """The (host, page) targets of a page: tree children, home, then two or three random pages."""
        count, fanout = self.spec.pages_of(host), self.fanout[host]
        rng = random.Random((self.spec.seed * 1_000_003 + host) * 10_000_019 + index)
        targets = [(host, c) for c in range(index * fanout + 1, min(count, index * fanout + fanout + 1))]
        targets.append((host, 0))
        for _ in range(3 if rng.random() < 0.76 else 2):
            other = host if self.spec.hosts == 1 or rng.random() < 0.8 else rng.randrange(self.spec.hosts)
            targets.append((other, rng.randrange(self.spec.pages_of(other))))
        return targets

    def page(self, host: int, index: int) -> bytes:
        rng = random.Random((self.spec.seed * 1_000_033 + host) * 10_000_079 + index)
        title = " ".join(rng.choice(WORDS) for _ in range(4)).title()
        items = []
        for target_host, target in self.links(host, index):
            path = page_path(target)
            href = path if target_host == host else self.spec.origin(target_host) + path
            items.append(f'<li><a href="{href}">{" ".join(rng.choice(WORDS) for _ in range(3))}</a></li>')
        if rng.random() < 0.03:
            items.append(f'<li><a href="{PRIVATE_DIR}r{index}.html">Staff only</a></li>')
        if index == self.document_page(host):
            name = self.document_names[host // 50]
            items.append(f'<li><a href="{DOCUMENTS_DIR}{name}">Service and data: {name}</a></li>')
        text = "\n".join(f"<p>{self.paragraphs[rng.randrange(512)]}</p>" for _ in range(rng.randint(3, 6)))
        return (
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>\n'
            f'<body><h1>{title}</h1>\n{text}\n<ul class="links">\n'
            + "\n".join(items)
            + "\n</ul></body></html>\n"
        ).encode()

    def answer(self, host: int, path: str, request_headers: bytes = b"") -> tuple[int, str, bytes, str]:
        """(status, content type, body, validator header lines) for a path of a host; counts it."""
        self.stats.requests += 1
        if path == "/robots.txt":
            self.stats.robots += 1
            return 200, "text/plain", self.robots, ""
        if path == STATS_PATH:
            self.stats.requests -= 1  # the bench's own reading is not crawl traffic
            return 200, "application/json", json.dumps(asdict(self.stats)).encode(), ""
        if path.startswith(PRIVATE_DIR):
            self.stats.disallowed += 1
            return 200, "text/html", b"<p>private</p>\n", ""
        if path.startswith(DOCUMENTS_DIR) and (body := self.document_bodies.get(path[len(DOCUMENTS_DIR) :])):
            self.stats.documents += 1
            kml = path.endswith(".kml")
            return 200, "application/vnd.google-earth.kml+xml" if kml else "application/xml", body, ""
        index = 0 if path == "/" else int(m.group(1)) if (m := _PAGE.match(path)) else -1
        if not 0 <= index < self.spec.pages_of(host) or (index and page_path(index) != path):
            self.stats.not_found += 1
            return 404, "text/plain", b"not found\n", ""
        bit = self.offsets[host] + index
        if self.seen[bit >> 3] & (1 << (bit & 7)):
            self.stats.repeated_pages += 1
        else:
            self.seen[bit >> 3] |= 1 << (bit & 7)
            self.stats.pages += 1
        if not self.spec.sends_validators(host):
            return 200, "text/html; charset=utf-8", self.page(host, index), ""
        etag = f'"{host:x}.{index:x}"'  # a page never changes: its identity is its content's
        validators = f"ETag: {etag}\r\nLast-Modified: {LAST_MODIFIED}\r\n"
        if not_modified(etag, request_headers):
            self.stats.not_modified += 1
            return 304, "text/html; charset=utf-8", b"", validators
        return 200, "text/html; charset=utf-8", self.page(host, index), validators


def not_modified(etag: str, request_headers: bytes) -> bool:
    """Whether a request's conditions hold for a page of ``etag`` last modified at LAST_MODIFIED (RFC 9110
    13.2.2: If-None-Match decides when sent; If-Modified-Since only without it)."""
    conditions = {
        name.lower(): value.decode("latin-1") for name, value in _CONDITIONS.findall(request_headers)
    }
    if b"if-none-match" in conditions:
        tags = [tag.strip().removeprefix("W/") for tag in conditions[b"if-none-match"].split(",")]
        return "*" in tags or etag in tags
    if b"if-modified-since" in conditions:
        try:
            return parsedate_to_datetime(conditions[b"if-modified-since"]) >= _LAST_MODIFIED_AT
        except (TypeError, ValueError):
            return False
    return False


_REASONS = {200: "OK", 304: "Not Modified", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


class _Connection(asyncio.Protocol):
    """One keep-alive connection: request heads in, responses out in order (no request bodies)."""

    def __init__(self, web: BigWeb):
        self.web = web
        self.buffer = b""
        self.pending: asyncio.Future | None = None  # the slow answer being waited for

    def connection_made(self, transport):
        self.transport = transport
        self.host = self.web.by_address.get(transport.get_extra_info("sockname")[0], 0)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > MAX_HEAD and b"\r\n\r\n" not in self.buffer:
            self.transport.close()
            return
        if self.pending is None:
            self._answer_buffered()

    def _answer_buffered(self) -> None:
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0 and not self.transport.is_closing():
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            line, _, headers = head.partition(b"\r\n")
            parts = line.split(b" ")
            if len(parts) != 3:
                self._send((400, "text/plain", b"bad request\n", ""), head=False, close=True)
                return
            method, target = parts[0], parts[1].decode("latin-1")
            path = target.split("?", 1)[0]
            close = b"connection: close" in headers.lower()
            if method not in (b"GET", b"HEAD"):
                self._send((405, "text/plain", b"GET or HEAD\n", ""), head=False, close=close)
                continue
            # a probe for a service at a document's URL finds none, as on a static file host
            if "?" in target and path.startswith(DOCUMENTS_DIR):
                reply = 404, "text/plain", b"not found\n", ""
            else:
                reply = self.web.answer(self.host, path, headers)
            if self.web.spec.is_slow(self.host) and path != STATS_PATH:
                loop = asyncio.get_running_loop()
                self.pending = loop.create_future()
                loop.call_later(self.web.spec.slow_seconds, self._send_late, reply, method, close)
                return
            self._send(reply, head=method == b"HEAD", close=close)

    def _send_late(self, reply, method, close) -> None:
        self.pending = None
        if not self.transport.is_closing():
            self._send(reply, head=method == b"HEAD", close=close)
            self._answer_buffered()

    def _send(self, reply: tuple[int, str, bytes, str], head: bool, close: bool) -> None:
        status, kind, body, extra = reply
        length = "" if status == 304 else f"Content-Length: {len(body)}\r\n"
        if not head:
            self.web.stats.body_bytes += len(body)
        self.transport.write(
            f"HTTP/1.1 {status} {_REASONS[status]}\r\nContent-Type: {kind}\r\n{length}{extra}"
            f"{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n".encode()
            + (b"" if head else body)
        )
        if close:
            self.transport.close()


async def serve(spec: BigWebSpec, ready: asyncio.Event | None = None) -> None:
    """Listens on every host's address until cancelled."""
    web = BigWeb(spec)
    loop = asyncio.get_running_loop()
    servers = [
        await loop.create_server(lambda: _Connection(web), spec.address(h), spec.port, backlog=1024)
        for h in range(spec.hosts)
    ]
    print(f"serving {spec.pages:,} pages over {spec.hosts:,} hosts on port {spec.port}", flush=True)
    if ready is not None:
        ready.set()
    try:
        await asyncio.Event().wait()
    finally:
        for server in servers:
            server.close()


async def serve_until_signalled(spec: BigWebSpec) -> None:
    """Serves until SIGTERM or SIGINT, then closes the listeners."""
    server = asyncio.create_task(serve(spec))
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, server.cancel)
    with suppress(asyncio.CancelledError):
        await server


def main(argv: list[str] | None = None) -> None:
    defaults = BigWebSpec()
    parser = argparse.ArgumentParser(prog="python -m bench.big_web", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=defaults.pages)
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--port", type=int, default=defaults.port)
    parser.add_argument("--slow-hosts", type=int, default=defaults.slow_hosts)
    parser.add_argument("--slow-seconds", type=float, default=defaults.slow_seconds)
    args = parser.parse_args(argv)
    spec = BigWebSpec(
        pages=args.pages,
        hosts=args.hosts,
        port=args.port,
        slow_hosts=args.slow_hosts,
        slow_seconds=args.slow_seconds,
    )
    try:
        import uvloop  # in the lock through uvicorn; a faster loop for a server that is mostly loop
    except ImportError:
        runner = asyncio.run
    else:
        runner = uvloop.run
    runner(serve_until_signalled(spec))


if __name__ == "__main__":
    main()
