"""Files too large to download, read in parts with HTTP Range requests: the head of a file, or a ZIP's
central directory, then the one member a detector needs (a KMZ's doc.kml). Every read is capped at its
length, so a server that ignores Range costs no download; it is left alone with RangeNotHonoured, unless
the detector needs only the directory (a shapefile), which is then read from the end of a streamed GET.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import replace

from geoweb.detect.base import DetectContext
from geoweb.errors import HTTPStatusError, MalformedContent, RangeNotHonoured, UnsafeContent
from geoweb.fetch.response import Response
from geoweb.ziputil import (
    LOCAL_HEADER_BYTES,
    TAIL_BYTES,
    ZipEntry,
    ZipReader,
    locate_directory,
    parse_directory,
)

_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
log = logging.getLogger("geoweb.detect")

HEAD_BYTES = 64 * 1024  # of a file over the body cap, enough to see what it is (its root, its first feature)
# Room for a member's local extra field, read with its header and data in one request; real archives hold
# a few dozen bytes there, and a longer one costs a second request.
EXTRA_FIELD_ALLOWANCE = 1024


async def read_range(
    ctx: DetectContext, url: str, start: int | None, length: int, *, counter: str
) -> tuple[bytes, int]:
    """``length`` bytes from ``start`` (None: the last ``length`` bytes) and the size of the whole file;
    counted as ``<counter>/range_requests``."""
    spec = f"bytes=-{length}" if start is None else f"bytes={start}-{start + length - 1}"
    ctx.stats[f"{counter}/range_requests"] += 1
    response = await ctx.fetch(url, headers={"Range": spec}, max_bytes=length)
    content_range = response.headers.get("content-range", "")
    match = _CONTENT_RANGE.fullmatch(content_range.strip())
    if response.status != 206 or match is None:
        raise RangeNotHonoured(f"HTTP {response.status} to {spec!r}; the archive is not downloaded")
    first, last, total = map(int, match.groups())
    wanted = (max(total - length, 0), total - 1) if start is None else (start, min(start + length, total) - 1)
    if (first, last) != wanted or len(response.body) != last - first + 1:
        raise RangeNotHonoured(
            f"Content-Range {content_range!r} with {len(response.body)} bytes does not answer {spec!r}"
        )
    return response.body, total


class Head:
    """A fetch's sink keeping the first ``length`` bytes of a body and ending the read there."""

    def __init__(self, length: int):
        self.length = length
        self.data = b""

    def reset(self) -> None:
        self.data = b""

    def feed(self, chunk: bytes) -> bool:
        self.data += bytes(chunk[: self.length - len(self.data)])
        return len(self.data) >= self.length


async def read_head(ctx: DetectContext, response: Response, length: int, *, counter: str) -> bytes:
    """The first bytes (up to ``length``) of a file the body cap cut: those the crawl read, else one
    request's, asked as a Range and read only that far whatever the server sends (a server ignoring Range
    sends the file's start anyway: its read ends after ``length`` bytes; at most ``tail_stream_max_bytes``
    may be announced)."""
    if response.body:
        return response.body[:length]
    ctx.stats[f"{counter}/range_requests"] += 1
    head = Head(length)
    answer = await ctx.fetch(
        response.final_url,
        headers={"Range": f"bytes=0-{length - 1}"},
        max_bytes=ctx.settings.tail_stream_max_bytes,
        sink=head,
    )
    if answer.status not in (200, 206):
        raise HTTPStatusError(answer.status, url=answer.final_url)
    if not head.data:  # a whole file announced over the stream cap: not read
        raise RangeNotHonoured(f"HTTP {answer.status} without the first {length} bytes; the file is not read")
    return head.data


async def read_tail(ctx: DetectContext, url: str, length: int, *, counter: str) -> tuple[bytes, int]:
    """The last ``length`` bytes of the file at ``url`` and its size, from a plain GET streamed to its end
    (at most ``tail_stream_max_bytes``) of which only those bytes are kept; counted as
    ``<counter>/tail_streams``."""
    ctx.stats[f"{counter}/tail_streams"] += 1
    response = await ctx.fetch(url, max_bytes=length, tail=True)
    if not 200 <= response.status < 300:
        raise HTTPStatusError(response.status, url=url)
    if not response.complete:
        cap = ctx.settings.tail_stream_max_bytes
        raise RangeNotHonoured(f"the server ignores Range and the file is over {cap} bytes; not streamed")
    return response.body, response.body_offset + len(response.body)


async def remote_directory(
    ctx: DetectContext, url: str, *, counter: str, stream_tail: bool = False
) -> tuple[list[ZipEntry], int]:
    """The members of the archive at ``url`` and its size, in one or two Range requests. With
    ``stream_tail``, a server that ignores Range is asked for the whole file once more, of which only the
    last bytes are kept (a detector that needs nothing but the directory)."""
    try:
        tail, archive_bytes = await read_range(ctx, url, None, TAIL_BYTES, counter=counter)
    except RangeNotHonoured as exc:
        if not stream_tail:
            raise
        log.info("%s: %s; its directory is read from the end of the streamed file", url, exc)
        tail, archive_bytes = await read_tail(ctx, url, TAIL_BYTES, counter=counter)
    location = locate_directory(tail, archive_bytes)
    if location.size > ctx.settings.max_body_bytes:
        raise UnsafeContent(f"central directory of {location.size} bytes is over the body cap")
    in_tail = location.offset - (archive_bytes - len(tail))
    if in_tail >= 0:
        directory = tail[in_tail : in_tail + location.size]
    else:
        directory, _ = await read_range(ctx, url, location.offset, location.size, counter=counter)
    return parse_directory(directory, location.count), archive_bytes


async def read_member(
    ctx: DetectContext, url: str, entry: ZipEntry, *, max_ratio: int, max_bytes: int, counter: str
) -> Iterator[bytes | memoryview]:
    """One member, decompressed a chunk at a time under the same bomb limits as ``ZipReader`` (its
    ``stream``: the checks end with the last chunk): its local header and data are read with one Range
    request (two when its extra field is unusually long)."""
    if entry.compressed_size > max_bytes:
        raise UnsafeContent(f"member {entry.name!r} of {entry.compressed_size} bytes is over the cap")
    length = LOCAL_HEADER_BYTES + 4 * len(entry.name) + EXTRA_FIELD_ALLOWANCE + entry.compressed_size
    chunk, _ = await read_range(ctx, url, entry.header_offset, length, counter=counter)
    member = replace(entry, header_offset=0)
    reader = ZipReader(chunk, max_ratio=max_ratio, max_bytes=max_bytes, entries=[member])
    needed = reader.member_end(member)
    if needed > len(chunk):
        chunk, _ = await read_range(ctx, url, entry.header_offset, needed, counter=counter)
        reader = ZipReader(chunk, max_ratio=max_ratio, max_bytes=max_bytes, entries=[member])
    if reader.member_end(member) > len(chunk):
        raise MalformedContent(f"member {entry.name!r}: data runs past the end of the archive")
    return reader.stream(member)
