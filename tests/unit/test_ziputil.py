"""The safe ZIP reader and the central-directory parser, against archives written by the standard library."""

import io
import os
import struct
import tracemalloc
import zipfile

import pytest

from geoweb.errors import MalformedContent, UnsafeContent
from geoweb.ziputil import (
    RATIO_FLOOR_BYTES,
    TAIL_BYTES,
    ZipReader,
    list_members,
    locate_directory,
    parse_directory,
)
from tests.data.files.make_fixtures import MB, zip64_bytes, zip_bytes

MEMBERS = {
    "doc.kml": b"<kml/>" * 500,
    "files/Grüße.txt": b"utf-8 name",
    "random.bin": os.urandom(3000),
    "empty/": b"",
}
# The standard library cannot write an empty member as ZIP64.
ZIP64_MEMBERS = {name: data for name, data in MEMBERS.items() if data}


def reader(data: bytes, *, max_ratio: int = 100, max_bytes: int = 10 * MB) -> ZipReader:
    return ZipReader(data, max_ratio=max_ratio, max_bytes=max_bytes)


def expected_entries(data: bytes) -> list[tuple[str, int, int]]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(i.filename, i.compress_size, i.file_size) for i in archive.infolist()]


def test_members_listed_and_read_exactly_as_zipfile_wrote_them():
    data = zip_bytes(MEMBERS)
    zip_reader = reader(data)
    assert [(e.name, e.compressed_size, e.size) for e in zip_reader.entries] == expected_entries(data)
    assert {e.name: zip_reader.read(e) for e in zip_reader.entries} == MEMBERS


def test_stored_members_are_read():
    zip_reader = reader(zip_bytes(MEMBERS, compression=zipfile.ZIP_STORED))
    assert [zip_reader.read(e) for e in zip_reader.entries] == list(MEMBERS.values())


def test_zip64_archive_is_parsed_from_its_zip64_records(monkeypatch):
    data = zip64_bytes(ZIP64_MEMBERS, monkeypatch)
    # The archive really uses ZIP64: a ZIP64 end record, and 0xFFFFFFFF size placeholders in the directory.
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    first = data.index(b"PK\x01\x02")
    assert struct.unpack_from("<LL", data, first + 20) == (0xFFFFFFFF, 0xFFFFFFFF)
    zip_reader = reader(data)
    assert [(e.name, e.compressed_size, e.size) for e in zip_reader.entries] == expected_entries(data)
    assert {e.name: zip_reader.read(e) for e in zip_reader.entries} == ZIP64_MEMBERS


@pytest.mark.parametrize("comment", [b"", b"c" * 0xFFFF])
def test_directory_located_from_the_tail_alone(comment):
    data = zip_bytes({**MEMBERS, "padding.bin": os.urandom(200_000)}, comment=comment)
    tail = data[-TAIL_BYTES:]
    location = locate_directory(tail, len(data))
    assert location.count == len(MEMBERS) + 1
    directory = data[location.offset : location.offset + location.size]
    names = [e.name for e in parse_directory(directory, location.count)]
    assert names == [name for name, _, _ in expected_entries(data)]
    # With the longest comment, the directory starts before the tail: a second read is needed.
    assert (location.offset >= len(data) - len(tail)) == (not comment)


def test_zip64_directory_located_from_the_tail_with_the_longest_comment(monkeypatch):
    data = zip64_bytes(
        {**ZIP64_MEMBERS, "padding.bin": os.urandom(100_000)}, monkeypatch, comment=b"c" * 0xFFFF
    )
    location = locate_directory(data[-TAIL_BYTES:], len(data))
    directory = data[location.offset : location.offset + location.size]
    assert [e.name for e in parse_directory(directory, location.count)][-1] == "padding.bin"


@pytest.mark.parametrize(
    "tail",
    [
        b"",
        b"<html>not found</html>",
        os.urandom(5000),
        b"PK\x05\x06\x00\x00",  # end record cut short
        b"PK\x05\x06" + b"\x00" * 16 + b"\x10\x00",  # comment length runs past the end
    ],
)
def test_garbage_tail_is_malformed(tail):
    with pytest.raises(MalformedContent):
        locate_directory(tail, 10_000_000)


def test_truncated_directory_is_malformed():
    data = zip_bytes(MEMBERS)
    location = locate_directory(data, len(data))
    directory = data[location.offset : location.offset + location.size]
    with pytest.raises(MalformedContent, match="truncated"):
        parse_directory(directory[:-30], location.count)


def test_directory_pointing_past_the_end_records_is_malformed():
    data = bytearray(zip_bytes(MEMBERS))
    eocd = data.rindex(b"PK\x05\x06")
    struct.pack_into("<L", data, eocd + 16, len(data))  # directory offset beyond the archive
    with pytest.raises(MalformedContent, match="outside"):
        list_members(bytes(data))


def test_zip64_placeholders_without_locator_are_malformed():
    data = bytearray(zip_bytes(MEMBERS))
    struct.pack_into("<L", data, data.rindex(b"PK\x05\x06") + 16, 0xFFFFFFFF)
    with pytest.raises(MalformedContent, match="ZIP64"):
        list_members(bytes(data))


def test_member_count_cap_refuses_before_parsing():
    data = zip_bytes({f"f{i}.txt": b"" for i in range(50)})
    with pytest.raises(UnsafeContent, match="50 members"):
        list_members(data, max_members=49)


def test_deflate_bomb_stops_at_the_ratio_cap():
    data = zip_bytes({"bomb.kml": bytes(20 * MB)})
    entry = reader(data).entries[0]
    assert entry.size / entry.compressed_size > 100
    with pytest.raises(UnsafeContent, match="zip bomb"):
        reader(data).read(entry)


def test_lying_size_header_does_not_fool_the_reader():
    data = bytearray(zip_bytes({"bomb.kml": bytes(20 * MB)}))
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<L", data, central + 24, 1000)  # claims 1000 bytes uncompressed
    zip_reader = reader(bytes(data))
    assert zip_reader.entries[0].size == 1000
    tracemalloc.start()
    try:
        with pytest.raises(UnsafeContent):
            zip_reader.read(zip_reader.entries[0])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * MB  # decompression stopped near the limit, far below the 20 MB the member holds


def test_archive_budget_counts_every_member_read():
    data = zip_bytes({"a.bin": os.urandom(600_000), "b.bin": os.urandom(600_000)})
    zip_reader = reader(data, max_bytes=1_000_000)
    assert len(zip_reader.read(zip_reader.entries[0])) == 600_000
    with pytest.raises(UnsafeContent):
        zip_reader.read(zip_reader.entries[1])


def test_small_very_compressible_member_is_not_a_bomb():
    blank_dbf = b" " * (RATIO_FLOOR_BYTES // 2)  # compresses far beyond 100:1
    data = zip_bytes({"blank.dbf": blank_dbf})
    zip_reader = reader(data)
    assert zip_reader.entries[0].size / zip_reader.entries[0].compressed_size > 100
    assert zip_reader.read(zip_reader.entries[0]) == blank_dbf


def test_corrupt_member_data_is_malformed():
    content = os.urandom(2000)
    data = bytearray(zip_bytes({"a.bin": content}, compression=zipfile.ZIP_STORED))
    data[data.index(content) + 10] ^= 0xFF
    zip_reader = reader(bytes(data))
    with pytest.raises(MalformedContent, match="CRC"):
        zip_reader.read(zip_reader.entries[0])


def test_cut_deflate_stream_is_malformed():
    data = bytearray(zip_bytes({"a.kml": b"<kml>" + os.urandom(5000).hex().encode() + b"</kml>"}))
    central = data.index(b"PK\x01\x02")
    compressed = struct.unpack_from("<L", data, central + 20)[0]
    struct.pack_into("<L", data, central + 20, compressed // 2)  # only half the stream is handed over
    zip_reader = reader(bytes(data))
    with pytest.raises(MalformedContent, match="truncated"):
        zip_reader.read(zip_reader.entries[0])


def test_member_running_past_the_archive_end_is_malformed():
    data = zip_bytes({"a.bin": os.urandom(5000)}, compression=zipfile.ZIP_STORED)
    zip_reader = reader(data)
    zip_reader.data = data[:3000]
    with pytest.raises(MalformedContent, match="past the end"):
        zip_reader.read(zip_reader.entries[0])


def test_encrypted_and_unsupported_members_are_refused():
    data = bytearray(zip_bytes({"a.txt": b"x" * 100}))
    struct.pack_into("<H", data, data.index(b"PK\x01\x02") + 8, 0x1)  # encrypted flag
    zip_reader = reader(bytes(data))
    with pytest.raises(MalformedContent, match="encrypted"):
        zip_reader.read(zip_reader.entries[0])
    bzip2 = zip_bytes({"a.txt": b"x" * 100}, compression=zipfile.ZIP_BZIP2)
    zip_reader = reader(bzip2)
    with pytest.raises(MalformedContent, match="compression method 12"):
        zip_reader.read(zip_reader.entries[0])


def test_deflate_error_is_malformed():
    data = bytearray(zip_bytes({"a.txt": b"hello " * 1000}))
    start = data.index(b"a.txt") + len("a.txt")
    data[start : start + 8] = b"\xff" * 8  # invalid deflate block type
    zip_reader = reader(bytes(data))
    with pytest.raises(MalformedContent):
        zip_reader.read(zip_reader.entries[0])
