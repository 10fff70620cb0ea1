"""The downloader: HTTP GET behind the address guard, robots.txt and per-origin slots.

Redirects are followed here, hop by hop, so every hop passes the same checks. Bodies are streamed under a
size cap that applies to decoded bytes. Failures raise ``geoweb.errors.FetchError`` subclasses; any HTTP
status, 4xx and 5xx included, is a ``Response``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Protocol

import aiohttp
from yarl import URL

from geoweb.errors import (
    BadResponse,
    BlockedAddress,
    ConnectionFailed,
    FetchError,
    FetchTimeout,
    InvalidURL,
    LeaseStoreUnavailable,
    TooManyRedirects,
)
from geoweb.fetch.addressguard import AddressGuard, GuardedResolver
from geoweb.fetch.leases import HostLeases
from geoweb.fetch.memory import GRANULE, MemoryBudget, Reservation
from geoweb.fetch.response import Response, Timing
from geoweb.fetch.robots import ROBOTS_MAX_BYTES, ROBOTS_MAX_REDIRECTS, RobotsCache
from geoweb.fetch.slots import Slots
from geoweb.settings import Settings

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
DECODED_ENCODINGS = frozenset({"gzip", "x-gzip", "deflate"})
# Cached answers were checked by the guard when resolved; keeping them saves a lookup per connection.
DNS_CACHE_SECONDS = 300


@dataclass(frozen=True, slots=True)
class _Options:
    """How one ``get`` fetches: the same for every hop of its redirect chain."""

    headers: dict[str, str] | None
    max_bytes: int
    decode: bool  # gzip/deflate bodies are decoded (not for byte ranges)
    max_redirects: int
    obey_robots: bool
    read_oversized: bool = False  # read the first max_bytes of a body declared larger (robots.txt)
    tail: bool = False  # stream the whole body, keeping only its last max_bytes
    sink: Sink | None = None  # given a 2xx body chunk by chunk, instead of keeping it


_ROBOTS_OPTIONS = _Options(
    headers=None,
    max_bytes=ROBOTS_MAX_BYTES,
    decode=True,
    max_redirects=ROBOTS_MAX_REDIRECTS,
    obey_robots=False,
    read_oversized=True,  # RFC 9309 2.5: parse the first 500 KiB of a larger file
)


class Sink(Protocol):
    """Reads a body as it downloads (``Fetcher.get(sink=...)``): ``reset`` starts it again for each attempt
    (a retry, a request without compression), ``feed`` takes each decoded chunk and returns True when it
    needs no more (the read ends there, the response incomplete); an error it raises ends the fetch and
    reaches the caller as it is."""

    def reset(self) -> None: ...

    def feed(self, chunk: bytes) -> bool | None: ...


class Fetcher:
    """Fetches URLs safely and politely. Open it with ``async with Fetcher(settings) as fetcher``.

    Every request, robots.txt included, carries ``settings.user_agent``. Outcomes are counted in ``stats``.
    """

    def __init__(
        self, settings: Settings, *, stats: Counter | None = None, held: Callable[[], int] = lambda: 0
    ):
        self.settings = settings
        self.stats = stats if stats is not None else Counter()
        self._guard = AddressGuard(settings.allowed_hosts, self.stats)
        self._slots = Slots(settings.per_host_concurrency, settings.per_host_delay)
        self._leases = HostLeases.from_settings(settings)  # None: politeness per process only
        self._robots = (
            RobotsCache(
                self._fetch_robots,
                user_agent=settings.user_agent,
                max_crawl_delay=settings.max_crawl_delay,
                allow_on_5xx=settings.robots_5xx_allow,
                stats=self.stats,
            )
            if settings.obey_robots
            else None
        )
        self._session: aiohttp.ClientSession | None = None
        # bodies are admitted under max_memory_bytes, counted above what the process holds as it opens and
        # what ``held`` says the crawl keeps besides the bound
        self._memory = MemoryBudget(settings.max_memory_bytes, held=held, stats=self.stats)

    async def __aenter__(self) -> Fetcher:
        s = self.settings
        connector = aiohttp.TCPConnector(
            limit=s.concurrency, resolver=GuardedResolver(self._guard), ttl_dns_cache=DNS_CACHE_SECONDS
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=s.total_timeout, sock_connect=s.connect_timeout, sock_read=s.read_timeout
            ),
            headers={"User-Agent": s.user_agent, "Accept-Encoding": "gzip, deflate"},
            auto_decompress=False,  # decoded in _read_body, so the size cap counts decoded bytes
            cookie_jar=aiohttp.DummyCookieJar(),  # a crawler keeps no cookies
        )
        return self

    async def __aexit__(self, *exc_info) -> None:
        if self._robots is not None:
            self._robots.close()
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._leases is not None:
            await self._leases.close()

    async def get(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
        tail: bool = False,
        sink: Sink | None = None,
    ) -> Response:
        """GET ``url``, following redirects; the body is cut at ``max_bytes`` (default from settings).

        With ``tail``, the whole body is streamed (up to ``settings.tail_stream_max_bytes``) and only its last
        ``max_bytes`` are kept: ``Response.body_offset`` says where they start. A ZIP's central directory
        is read so from a server that ignores Range, in the memory of those bytes. With ``sink``, a 2xx
        body (up to ``max_bytes``) is given to it as it downloads and not kept: the response's body is empty.
        Every body is admitted under ``max_memory_bytes`` first (``geoweb.fetch.memory``).
        """
        if self._session is None:
            raise RuntimeError("Fetcher is not open: use 'async with Fetcher(settings) as fetcher'")
        stored = tail or (headers is not None and any(name.lower() == "range" for name in headers))
        if stored:
            # A byte range or a tail of a compressed body is useless: ask for the bytes as stored.
            headers = {"Accept-Encoding": "identity", **(headers or {})}
        options = _Options(
            headers=headers,
            max_bytes=self.settings.max_body_bytes if max_bytes is None else max_bytes,
            decode=not stored,
            max_redirects=self.settings.max_redirects,
            obey_robots=self._robots is not None,
            tail=tail,
            sink=sink,
        )
        try:
            return await self._fetch(url, options)
        except FetchError as exc:
            exc.url = url
            self.stats[f"fetch/{exc.reason}"] += 1
            level = (
                logging.WARNING if isinstance(exc, (BlockedAddress, LeaseStoreUnavailable)) else logging.INFO
            )
            log.log(level, "fetch failed (%s): %s: %s", exc.reason, url, exc)
            raise

    async def _fetch_robots(self, url: str) -> Response:
        return await self._fetch(url, _ROBOTS_OPTIONS)

    async def _fetch(self, url: str, options: _Options) -> Response:
        """Follow the redirect chain of ``url``; each hop is a separate, fully checked fetch."""
        current = _http_url(url)
        redirects: list[str] = []
        while True:
            try:
                response = await self._fetch_hop(url, current, options)
            except BlockedAddress as exc:
                exc.url = str(current)  # which hop was blocked: robots.txt tells its origin from a redirect
                raise
            location = response.headers.get("location") if response.status in REDIRECT_STATUSES else None
            if location is None:
                response.redirects = redirects
                return response
            self.stats["fetch/redirected"] += 1
            redirects.append(response.final_url)
            if len(redirects) > options.max_redirects:
                raise TooManyRedirects(f"more than {options.max_redirects} redirects")
            current = _http_url(location, base=current)
            if str(current) in redirects:
                raise TooManyRedirects(f"redirect loop back to {current}")

    async def _fetch_hop(self, url: str, current: URL, options: _Options) -> Response:
        """One URL of a chain: guard, robots.txt, slot and shared lease, then the request with its retries."""
        self._guard.check_literal(current.raw_host, current.port)
        origin = f"{current.scheme}://{current.raw_host}:{current.port}"
        crawl_delay = await self._robots.check(current, origin) if options.obey_robots else None
        slot = self._slots.get(origin, crawl_delay)
        retries = self.settings.retries
        attempt = 0
        while True:
            # the slot queues this process's requests; the lease, inside it, those of the whole deployment
            lease = nullcontext() if self._leases is None else self._leases.hold(origin, slot.delay)
            try:
                async with slot, lease:
                    response = await self._request(url, current, options)
            except (aiohttp.ClientConnectorDNSError, aiohttp.ClientSSLError) as exc:
                # a missing name or a bad certificate is not fixed by asking again
                raise ConnectionFailed(f"{current}: {exc}") from exc
            except TimeoutError as exc:
                raise FetchTimeout(f"{_timeout_kind(exc)} timeout on {current}") from exc
            except aiohttp.ClientConnectionError as exc:
                if attempt == retries:
                    raise ConnectionFailed(f"{current}: {exc}") from exc
                delay = self.settings.retry_backoff * 2**attempt
            except aiohttp.ClientError as exc:  # a malformed status line, header or URL
                raise BadResponse(f"bad HTTP response from {current}: {exc}") from exc
            else:
                if attempt == retries or not (response.status == 429 or response.status >= 500):
                    return response
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                if retry_after is not None and retry_after > self.settings.max_retry_after:
                    # asked to wait longer than we wait: the answer stands (a tarpit's, or a closed door's)
                    self.stats["fetch/retry_after_refused"] += 1
                    return response
                delay = self.settings.retry_backoff * 2**attempt if retry_after is None else retry_after
            self.stats["fetch/retries"] += 1
            log.debug("retrying %s in %.2f s (attempt %d)", current, delay, attempt + 1)
            await asyncio.sleep(delay)
            attempt += 1

    async def _request(self, url: str, current: URL, options: _Options) -> Response:
        try:
            return await self._send(url, current, options)
        except _Undecodable as exc:
            # Broken compression is a server bug; the same document asked for uncompressed is usually fine.
            log.info("undecodable body from %s (%s); asking again without compression", current, exc)
            self.stats["fetch/undecodable"] += 1
            identity = {**(options.headers or {}), "Accept-Encoding": "identity"}
            plain = await self._send(url, current, replace(options, headers=identity, decode=False))
            if plain.headers.get("content-encoding", "identity").strip().lower() in DECODED_ENCODINGS:
                self._incomplete(current, "incomplete", f"{exc}, and compressed again when asked not to be")
                return exc.partial
            return plain

    async def _send(self, url: str, current: URL, options: _Options) -> Response:
        self.stats["fetch/requests"] += 1
        sent = time.monotonic()
        async with self._session.get(current, headers=options.headers, allow_redirects=False) as resp:
            first_byte = time.monotonic()
            status = resp.status
            self.stats[f"fetch/status/{status}"] += 1
            headers = {name.lower(): value for name, value in resp.headers.items()}
            offset = 0
            if status in REDIRECT_STATUSES and "location" in headers:
                body, complete, undecodable = b"", True, None  # followed, never returned: no need to read it
            else:
                sink = options.sink if 200 <= status < 300 else None
                reserved = _reserved_bytes(resp.content_length, options, sink)
                with await self._memory.reserve(str(current), reserved) as reservation:
                    if options.tail:
                        body, offset, complete = await self._read_tail(resp, options.max_bytes)
                        undecodable = None
                    else:
                        body, complete, undecodable = await self._read_body(
                            resp, headers, options, reservation, sink
                        )
            received = resp.content.total_bytes
        timing = Timing(first_byte - sent, time.monotonic() - sent, received)
        self.stats["fetch/bytes"] += len(body)
        response = Response(
            url=url, final_url=str(current), status=status, headers=headers, body=body, complete=complete,
            body_offset=offset, timing=timing,
        )  # fmt: skip
        if undecodable:
            raise _Undecodable(undecodable, response)
        return response

    async def _read_body(
        self,
        resp: aiohttp.ClientResponse,
        headers: dict[str, str],
        options: _Options,
        reservation: Reservation,
        sink: Sink | None,
    ) -> tuple[bytes, bool, str | None]:
        """The body, decoded, cut at ``max_bytes``; False when it was cut or broken; why it did not decode.
        Given to ``sink`` instead when there is one (an empty body returned); a kept body is covered by
        ``reservation`` as it grows."""
        max_bytes = options.max_bytes
        if not options.read_oversized and resp.content_length is not None and resp.content_length > max_bytes:
            self._incomplete(resp.url, "truncated", f"Content-Length {resp.content_length} over the cap")
            return b"", False, None
        encoding = headers.get("content-encoding", "").strip().lower()
        decoder = _Decoder() if options.decode and encoding in DECODED_ENCODINGS else None
        parts: list[bytes] = []
        size = 0
        if sink is not None:
            sink.reset()
        try:
            while chunk := await resp.content.readany():
                if decoder is not None:
                    chunk = decoder.decompress(chunk, max_bytes - size + 1)
                size += len(chunk)
                if sink is None:
                    reservation.cover(size)
                    parts.append(chunk)
                elif size <= max_bytes and sink.feed(chunk):
                    return b"", False, None  # the sink has what it needs
                if size > max_bytes:
                    self._incomplete(resp.url, "truncated", f"body over the cap of {max_bytes} bytes")
                    return b"".join(parts)[:max_bytes], False, None
                if decoder is not None and decoder.eof:
                    # The document ends with its checked gzip trailer, whatever Content-Length promised
                    # (pycsw 2.6 sends the uncompressed length with a gzip body and then keeps quiet).
                    break
        except aiohttp.ClientPayloadError as exc:
            self._incomplete(resp.url, "incomplete", f"body cut short: {exc}")
            return b"".join(parts), False, None
        except zlib.error as exc:
            return b"".join(parts), False, f"undecodable {encoding} body: {exc}"
        if decoder is not None and not decoder.finished:
            return b"".join(parts), False, f"{encoding} stream ends early"
        return b"".join(parts), True, None

    async def _read_tail(self, resp: aiohttp.ClientResponse, keep: int) -> tuple[bytes, int, bool]:
        """The last ``keep`` bytes of the body as sent (not decoded: a tail is read for its stored bytes),
        their offset in it, and whether the whole body was streamed within ``tail_stream_max_bytes``."""
        limit = self.settings.tail_stream_max_bytes
        if resp.content_length is not None and resp.content_length > limit:
            self._incomplete(resp.url, "truncated", f"Content-Length {resp.content_length} over the tail cap")
            return b"", 0, False
        window = bytearray()
        size = 0
        try:
            while chunk := await resp.content.readany():
                size += len(chunk)
                if size > limit:
                    self._incomplete(resp.url, "truncated", f"body over the tail cap of {limit} bytes")
                    return b"", 0, False
                window += chunk
                del window[: max(0, len(window) - keep)]
        except aiohttp.ClientPayloadError as exc:
            self._incomplete(resp.url, "incomplete", f"body cut short: {exc}")
            return b"", 0, False
        self.stats["fetch/tail_streamed_bytes"] += size
        return bytes(window), size - len(window), True

    def _incomplete(self, url: URL, key: str, reason: str) -> None:
        self.stats[f"fetch/{key}"] += 1
        log.info("incomplete body: %s: %s", url, reason)


class _Undecodable(Exception):
    """Raised by ``_send`` for a gzip/deflate body that does not decode; ``partial`` is what did."""

    def __init__(self, reason: str, partial: Response):
        super().__init__(reason)
        self.partial = partial


class _Decoder:
    """Decodes gzip or deflate, never more than asked for: a gzip bomb stops at the size cap."""

    def __init__(self):
        self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)  # a gzip or a zlib header
        self._started = False

    def decompress(self, data: bytes, max_length: int) -> bytes:
        if not self._started:
            self._started = True
            try:
                return self._zlib.decompress(data, max_length)
            except zlib.error:
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" is often sent headerless
        return self._zlib.decompress(data, max_length)

    @property
    def eof(self) -> bool:
        """The compressed stream ended where its format says it ends."""
        return self._zlib.eof

    @property
    def finished(self) -> bool:
        return self._zlib.eof or not self._started


def _reserved_bytes(declared: int | None, options: _Options, sink: Sink | None) -> int:
    """What to reserve before reading a body: its declared length (a body declared over the cap is not
    read), else a granule; the tail kept of a streamed body; a chunk of a body given to a sink. A body that
    grows past it (a compressed one decoded) is covered a granule at a time."""
    if sink is not None:
        return min(GRANULE, options.max_bytes)
    if options.tail:
        return options.max_bytes
    if declared is not None and (declared <= options.max_bytes or options.read_oversized):
        return min(declared, options.max_bytes)
    return 0 if declared is not None else min(GRANULE, options.max_bytes)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or HTTP-date); None if absent or invalid."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # HTTP-dates are GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _http_url(text: str, base: URL | None = None) -> URL:
    try:
        url = URL(text) if base is None else base.join(URL(text))
    except (TypeError, ValueError) as exc:
        raise InvalidURL(f"invalid URL {text!r}: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.raw_host:
        raise InvalidURL(f"not an http(s) URL: {text!r}")
    return url


def _timeout_kind(exc: TimeoutError) -> str:
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "connect"
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return "read"
    return "total"
