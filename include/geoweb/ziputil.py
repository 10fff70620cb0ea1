"""Safe reading of ZIP archives held in memory, and of a ZIP's central directory from its last bytes.

Nothing is ever extracted to disk and member names are never used as paths. Header sizes are claims: a member
is decompressed with a hard output limit, so a zip bomb stops at the limit whatever its headers say.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from geoweb.errors import MalformedContent, UnsafeContent

ZIP_MAGIC = b"PK\x03\x04"
_LOCAL = struct.Struct("<26xHH")  # signature ... name length, extra length
LOCAL_HEADER_BYTES = _LOCAL.size
_CENTRAL = struct.Struct("<8xHH4xLLLHHH8xL")  # 46 bytes: signature ... local header offset
_EOCD = struct.Struct("<4s4H2LH")  # 22 bytes
_ZIP64_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_MAX_COMMENT = 0xFFFF
# The last bytes of an archive always hold its end records: the EOCD with the longest comment, plus the
# ZIP64 locator and ZIP64 end record before it: one Range request of this size finds the directory.
TAIL_BYTES = _EOCD.size + _MAX_COMMENT + _ZIP64_LOCATOR.size + _ZIP64_EOCD.size
MAX_MEMBERS = 10_000  # more is a hostile listing, not a data download
# Small members of real data (a blank .dbf, a .prj) may compress better than the ratio cap; a bomb needs volume.
RATIO_FLOOR_BYTES = 1024 * 1024
_STORED, _DEFLATED = 0, 8
CHUNK_BYTES = 1024 * 1024  # decompressed at a time: a member is checked without being held whole
_FLAG_ENCRYPTED, _FLAG_UTF8 = 0x1, 0x800


@dataclass(frozen=True, slots=True)
class ZipEntry:
    """One central-directory record. ``size`` is what the archive claims, checked when the member is read."""

    name: str
    compressed_size: int
    size: int
    method: int
    flags: int
    crc: int
    header_offset: int


@dataclass(frozen=True, slots=True)
class DirectoryLocation:
    """Where the central directory lies in the archive, as its end records say."""

    offset: int
    size: int
    count: int


def locate_directory(tail: bytes, archive_size: int, *, max_members: int = MAX_MEMBERS) -> DirectoryLocation:
    """Find the central directory from ``tail``, the last bytes of an archive of ``archive_size`` bytes.

    Refuses an archive listing more than ``max_members`` entries before its directory is even read.
    """
    tail_start = archive_size - len(tail)
    pos = _find_eocd(tail)
    _, disk, cd_disk, count_here, count, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
    end = tail_start + pos  # nothing of the directory may lie past the end records
    locator = pos - _ZIP64_LOCATOR.size
    if locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        _, _, record_offset, _ = _ZIP64_LOCATOR.unpack_from(tail, locator)
        record = record_offset - tail_start
        if not 0 <= record <= len(tail) - _ZIP64_EOCD.size or tail[record : record + 4] != b"PK\x06\x06":
            raise MalformedContent("ZIP64 end record missing or outside the tail")
        _, _, _, _, disk, cd_disk, count_here, count, cd_size, cd_offset = _ZIP64_EOCD.unpack_from(
            tail, record
        )
        end = record_offset
    elif 0xFFFF in (count_here, count) or 0xFFFFFFFF in (cd_size, cd_offset):
        raise MalformedContent("ZIP64 archive without a ZIP64 locator")
    if disk or cd_disk or count_here != count:
        raise MalformedContent("multi-disk archives are not supported")
    if cd_offset + cd_size > end:
        raise MalformedContent("central directory lies outside the archive")
    if count > max_members:
        raise UnsafeContent(f"archive lists {count} members, over the cap of {max_members}")
    return DirectoryLocation(cd_offset, cd_size, count)


def _find_eocd(tail: bytes) -> int:
    # The last signature whose record and comment fit in the tail; a signature inside the comment is rare.
    pos = len(tail)
    while (pos := tail.rfind(b"PK\x05\x06", 0, pos)) >= 0:
        if pos + _EOCD.size <= len(tail):
            comment_length = _EOCD.unpack_from(tail, pos)[-1]
            if pos + _EOCD.size + comment_length <= len(tail):
                return pos
    raise MalformedContent("no ZIP end of central directory record")


def parse_directory(data: bytes, count: int) -> list[ZipEntry]:
    """The ``count`` entries (as ``locate_directory`` found them) of a central directory held in ``data``."""
    entries, pos = [], 0
    for _ in range(count):
        if pos + _CENTRAL.size > len(data) or data[pos : pos + 4] != b"PK\x01\x02":
            raise MalformedContent(f"central directory truncated or corrupt after {len(entries)} entries")
        flags, method, crc, csize, size, name_len, extra_len, comment_len, offset = _CENTRAL.unpack_from(
            data, pos
        )
        name_start = pos + _CENTRAL.size
        raw_name = data[name_start : name_start + name_len]
        extra = data[name_start + name_len : name_start + name_len + extra_len]
        size, csize, offset = _zip64_values(extra, size, csize, offset)
        name = raw_name.decode("utf-8" if flags & _FLAG_UTF8 else "cp437", errors="replace")
        entries.append(ZipEntry(name, csize, size, method, flags, crc, offset))
        pos = name_start + name_len + extra_len + comment_len
    return entries


def _zip64_values(extra: bytes, size: int, csize: int, offset: int) -> tuple[int, int, int]:
    """Replace the 0xFFFFFFFF placeholders from the ZIP64 extra field (id 1), in the order the spec fixes."""
    values = [size, csize, offset]
    if 0xFFFFFFFF not in values:
        return size, csize, offset
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        if tag == 1:
            field, end = pos + 4, pos + 4 + length
            for i, value in enumerate(values):
                if value == 0xFFFFFFFF:
                    if field + 8 > end:
                        raise MalformedContent("ZIP64 extra field too short")
                    values[i] = struct.unpack_from("<Q", extra, field)[0]
                    field += 8
            return values[0], values[1], values[2]
        pos += 4 + length
    raise MalformedContent("ZIP64 sizes announced but no ZIP64 extra field")


def list_members(data: bytes, *, max_members: int = MAX_MEMBERS) -> list[ZipEntry]:
    """The entries of a whole archive held in memory."""
    location = locate_directory(data[-TAIL_BYTES:], len(data), max_members=max_members)
    return parse_directory(data[location.offset : location.offset + location.size], location.count)


class ZipReader:
    """Reads members of an archive held in memory within a budget of decompressed bytes.

    ``max_bytes`` caps the sum of everything read from this archive; ``max_ratio`` caps each member's
    expansion (above ``RATIO_FLOOR_BYTES``). Both are counted on the bytes actually produced.
    """

    def __init__(
        self,
        data: bytes,
        *,
        max_ratio: int,
        max_bytes: int,
        max_members: int = MAX_MEMBERS,
        entries: list[ZipEntry] | None = None,
    ):
        """``entries`` given: ``data`` is a part of an archive holding those members (offsets into ``data``)."""
        self.data = data
        self.entries = list_members(data, max_members=max_members) if entries is None else entries
        self.max_ratio = max_ratio
        self.budget = max_bytes

    def read(self, entry: ZipEntry) -> bytes:
        """The whole member, decompressed and checked (size, CRC, bomb limits)."""
        return self.head(entry, None)

    def head(self, entry: ZipEntry, length: int | None) -> bytes:
        """The first ``length`` bytes of a member (None: all of it). The whole member is still decompressed
        and checked (size, CRC, bomb limits), a chunk at a time: only the bytes kept are held."""
        kept: list[bytes] = []
        kept_bytes = 0
        for chunk in self.stream(entry):
            if length is None or kept_bytes < length:
                piece = chunk if length is None else chunk[: length - kept_bytes]
                kept.append(bytes(piece))
                kept_bytes += len(piece)
        return b"".join(kept)

    def stream(self, entry: ZipEntry) -> Iterator[bytes | memoryview]:
        """The member decompressed a chunk (``CHUNK_BYTES``) at a time, for a reader that never holds it
        whole. The checks run as it goes (bomb limits) and after the last chunk (size, CRC): a consumer
        must read to the end, where a failed check raises."""
        if entry.flags & _FLAG_ENCRYPTED:
            raise MalformedContent(f"member {entry.name!r} is encrypted")
        limit = min(self.budget, max(entry.compressed_size * self.max_ratio, RATIO_FLOOR_BYTES))
        if entry.size > limit:  # the claim alone is enough to refuse; the real count below catches liars
            raise UnsafeContent(self._too_big(entry, limit))
        size = crc = 0
        for chunk in self._chunks(entry, limit):
            size += len(chunk)
            if size > limit:
                raise UnsafeContent(self._too_big(entry, limit))
            crc = zlib.crc32(chunk, crc)
            yield chunk
        if size != entry.size or crc != entry.crc:
            raise MalformedContent(f"member {entry.name!r}: size or CRC differs from its header")
        self.budget -= size

    def _chunks(self, entry: ZipEntry, limit: int) -> Iterator[bytes | memoryview]:
        """The decompressed member in pieces of at most ``CHUNK_BYTES``, stopping just past ``limit``."""
        raw = self._compressed(entry)
        if entry.method == _STORED:
            for start in range(0, len(raw), CHUNK_BYTES):
                yield raw[start : start + CHUNK_BYTES]
            return
        if entry.method != _DEFLATED:
            raise MalformedContent(f"member {entry.name!r}: unsupported compression method {entry.method}")
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        pending: bytes | memoryview = raw
        produced = 0
        try:
            while pending and produced <= limit:
                chunk = inflater.decompress(pending, CHUNK_BYTES)
                pending = inflater.unconsumed_tail
                produced += len(chunk)
                yield chunk
                if inflater.eof:
                    return
            while produced <= limit and not inflater.eof and (chunk := inflater.decompress(b"", CHUNK_BYTES)):
                produced += len(chunk)
                yield chunk
        except zlib.error as exc:
            raise MalformedContent(f"member {entry.name!r}: {exc}") from exc
        if produced <= limit and not inflater.eof:
            raise MalformedContent(f"member {entry.name!r}: compressed data truncated")

    def member_end(self, entry: ZipEntry) -> int:
        """The offset just past a member's data, from its local header (whose extra field may differ in
        length from the central directory's)."""
        pos = entry.header_offset
        if pos + _LOCAL.size > len(self.data) or self.data[pos : pos + 4] != ZIP_MAGIC:
            raise MalformedContent(f"member {entry.name!r}: no local header at offset {pos}")
        name_len, extra_len = _LOCAL.unpack_from(self.data, pos)
        return pos + _LOCAL.size + name_len + extra_len + entry.compressed_size

    def _compressed(self, entry: ZipEntry) -> memoryview:
        end = self.member_end(entry)
        if end > len(self.data):
            raise MalformedContent(f"member {entry.name!r}: data runs past the end of the archive")
        return memoryview(self.data)[end - entry.compressed_size : end]

    def _too_big(self, entry: ZipEntry, limit: int) -> str:
        if limit == self.budget:
            return f"member {entry.name!r} is over the size cap ({limit} bytes left to read from the archive)"
        return f"member {entry.name!r} expands more than {self.max_ratio}:1 (over {limit} bytes): zip bomb"
