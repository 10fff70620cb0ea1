"""The address guard: which addresses are refused, how allowed hosts are written, and the guarded resolver."""

import asyncio
import socket
from collections import Counter
from ipaddress import ip_address

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver

from geoweb.errors import BlockedAddress
from geoweb.fetch.addressguard import AddressGuard, GuardedResolver, is_public_address, parse_ipv4_legacy
from tests.hostile.servers import PAGE, HostileServer, fetch_each, loopback_settings

NON_PUBLIC = [
    "10.1.2.3",  # private
    "172.16.0.1",
    "192.168.1.1",
    "127.0.0.1",  # loopback, the whole /8
    "127.0.0.2",
    "0.0.0.0",  # unspecified
    "169.254.169.254",  # cloud metadata (link-local)
    "100.64.0.1",  # CGNAT
    "100.100.100.200",  # Alibaba metadata, inside CGNAT
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "192.0.2.1",  # documentation
    "::1",
    "::",
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",  # unique local
    "fd00:ec2::254",  # AWS metadata over IPv6
    "ff02::1",  # multicast
    "fec0::1",  # site-local
    "2001:db8::1",  # documentation
    "::ffff:127.0.0.1",  # IPv4-mapped forms
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1"]


@pytest.mark.parametrize("address", NON_PUBLIC)
def test_non_public_addresses_are_refused(address):
    assert not is_public_address(ip_address(address))


@pytest.mark.parametrize("address", [*PUBLIC, "64:ff9b::808:808"])
def test_public_addresses_pass(address):
    assert is_public_address(ip_address(address))


def test_one_private_address_among_public_ones_blocks_the_host():
    stats = Counter()
    guard = AddressGuard(stats=stats)
    guard.check("example.org", 80, ["93.184.216.34", "2606:4700::1111"])
    with pytest.raises(BlockedAddress, match=r"10\.0\.0\.1"):
        guard.check("example.org", 80, ["93.184.216.34", "10.0.0.1"])
    with pytest.raises(BlockedAddress):
        guard.check("example.org", 80, ["not-an-address"])
    assert stats["guard/blocked"] == 2


@pytest.mark.parametrize(
    ("entry", "host", "port", "allowed"),
    [
        ("localhost", "localhost", 8080, True),  # a bare host allows every port
        ("localhost", "localhost", 1, True),
        ("localhost:8080", "localhost", 8080, True),
        ("localhost:8080", "localhost", 8081, False),
        ("LocalHost:8080", "LOCALHOST", 8080, True),  # compared lower-case
        ("localhost", "localhost.", 80, True),  # the absolute form of the same name
        ("127.0.0.1:8080", "127.0.0.1", 8080, True),
        ("127.0.0.1:8080", "localhost", 8080, False),  # names are not resolved to match entries
        ("[::1]:8080", "::1", 8080, True),
        ("::1", "::1", 9, True),
        ("[::1]:8080", "::1", 8081, False),
    ],
)
def test_allowed_host_forms(entry, host, port, allowed):
    guard = AddressGuard(frozenset({entry}))
    assert guard.is_allowed_host(host, port) is allowed
    if allowed:
        guard.check(host, port, ["127.0.0.1"])
    else:
        with pytest.raises(BlockedAddress):
            guard.check(host, port, ["127.0.0.1"])


def test_literal_hosts_are_checked_and_names_left_to_the_resolver():
    guard = AddressGuard(frozenset({"127.0.0.1:8080"}))
    guard.check_literal("127.0.0.1", 8080)
    guard.check_literal("example.org", 80)  # a name: checked when resolved
    for host in ("127.0.0.1", "::1", "169.254.169.254", "::ffff:127.0.0.1"):
        with pytest.raises(BlockedAddress):
            guard.check_literal(host, 80)


class StaticResolver(AbstractResolver):
    """DNS answers from a table; counts lookups."""

    def __init__(self, table: dict[str, list[str]]):
        self.table = table
        self.lookups = Counter()
        self.closed = False

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.lookups[host] += 1
        return [
            {"hostname": host, "host": a, "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}
            for a in self.table[host]
        ]

    async def close(self):
        self.closed = True


def test_guarded_resolver_refuses_a_name_with_a_private_answer():
    inner = StaticResolver({"intranet.test": ["93.184.216.34", "192.168.0.10"], "ok.test": ["8.8.8.8"]})
    resolver = GuardedResolver(AddressGuard(), inner)

    async def run():
        assert [r["host"] for r in await resolver.resolve("ok.test", 80)] == ["8.8.8.8"]
        with pytest.raises(BlockedAddress, match=r"intranet\.test.*192\.168\.0\.10"):
            await resolver.resolve("intranet.test", 80)
        await resolver.close()

    asyncio.run(run())
    assert inner.closed


def test_the_connection_goes_to_the_checked_address_without_a_second_lookup():
    # "geo.test" exists only in this resolver: reaching the server proves the connector used its answer.
    with HostileServer() as server:
        inner = StaticResolver({"geo.test": ["127.0.0.1"], "evil.test": ["127.0.0.1"]})
        guard = AddressGuard(frozenset({f"geo.test:{server.port}"}))

        async def run():
            connector = aiohttp.TCPConnector(resolver=GuardedResolver(guard, inner), force_close=True)
            async with aiohttp.ClientSession(connector=connector) as session:
                for _ in range(2):
                    async with session.get(f"http://geo.test:{server.port}/ok") as response:
                        assert await response.read() == PAGE
                with pytest.raises(BlockedAddress):
                    await session.get(f"http://evil.test:{server.port}/ok")

        asyncio.run(run())
    # two connections (force_close), one lookup: the cached, already checked answer was reused
    assert inner.lookups == {"geo.test": 1, "evil.test": 1}
    assert server.paths() == ["/ok", "/ok"]


# Spellings of 127.0.0.1 that inet_aton (and so the system resolver, curl, older aiohttp) reads as loopback.
LOOPBACK_SPELLINGS = [
    "127.1",
    "127.0.1",
    "2130706433",
    "0177.0.0.1",
    "0x7f000001",
    "0x7f.1",
    "0x7F.0.0.1",
    "0177.0x0.1",  # mixed forms
    "017700000001",
    "127.0.0.1.",  # final dot
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_legacy_ipv4_spellings_are_read_as_inet_aton_reads_them(host):
    assert parse_ipv4_legacy(host) == ip_address("127.0.0.1")
    assert socket.inet_aton(host.rstrip(".")) == socket.inet_aton("127.0.0.1")  # the C library agrees


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("0", "0.0.0.0"),
        ("10.1", "10.0.0.1"),
        ("169.254.43518", "169.254.169.254"),
        ("0xa9fea9fe", "169.254.169.254"),
    ],
)
def test_legacy_spellings_of_other_addresses(host, address):
    assert parse_ipv4_legacy(host) == ip_address(address)


@pytest.mark.parametrize(
    "host",
    ["example.org", "1.2.3.4.5", "256.1.1.1", "1.256.1.1", "1.2.65536", "4294967296", "08.0.0.1", "0x1g", ""],
)
def test_what_is_no_inet_aton_address(host):
    assert parse_ipv4_legacy(host) is None


@pytest.mark.parametrize("host", [*LOOPBACK_SPELLINGS, "0xa9fea9fe", "10.1"])
def test_every_spelling_of_a_non_public_address_is_refused_before_the_request(host):
    stats = Counter()
    with pytest.raises(BlockedAddress, match="non-public"):
        AddressGuard(stats=stats).check_literal(host, 80)
    assert stats["guard/blocked"] == 1


@pytest.mark.parametrize("host", ["1.2.3.456", "08.0.0.1", "example.0x1f", "a.b.99999999999"])
def test_a_host_ending_in_a_number_that_is_no_address_is_refused(host):
    with pytest.raises(BlockedAddress, match="no IPv4 address"):
        AddressGuard().check_literal(host, 80)


def test_a_public_address_in_a_legacy_spelling_passes():
    AddressGuard().check_literal("134744072", 80)  # 8.8.8.8
    AddressGuard().check_literal("8.8.2056", 80)


def test_allowed_entries_and_hosts_are_compared_in_their_canonical_spelling():
    guard = AddressGuard(frozenset({"127.0.0.1:8080"}))
    guard.check_literal("127.1", 8080)
    guard.check_literal("0x7f000001", 8080)
    with pytest.raises(BlockedAddress):
        guard.check_literal("127.1", 8081)
    AddressGuard(frozenset({"0177.1"})).check_literal("127.0.0.1", 9)


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_no_spelling_of_loopback_reaches_a_port_that_is_not_allowed(host):
    # The allowed server is on loopback too: only its port may be reached, whatever the client would accept.
    with HostileServer() as allowed, HostileServer() as other:
        settings = loopback_settings(allowed)
        [result] = fetch_each(settings, f"http://{host}:{other.port}/ok")
    assert isinstance(result, BlockedAddress), result
    assert other.seen == []
