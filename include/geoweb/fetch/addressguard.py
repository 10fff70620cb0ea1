"""The address guard: no request may reach a private, loopback, link-local or metadata address.

Names are checked inside the connector's resolver, so the connection goes to the very address that was
checked (a second DNS answer cannot rebind the host). Literal IP hosts never reach a resolver and are
checked before the request, in every spelling a client may read as IPv4: inet_aton's (``127.1``,
``2130706433``, ``0177.0.0.1``, ``0x7f000001``) as well as the dotted quad. Which spellings an HTTP client
refuses or resolves differs between versions (aiohttp before 3.10 hands ``127.1`` to the system resolver,
which reads it as 127.0.0.1), so the guard decides them itself.
"""

from __future__ import annotations

import re
import socket
from collections import Counter
from collections.abc import Collection, Iterable
from functools import lru_cache
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from geoweb.errors import BlockedAddress

IPAddress = IPv4Address | IPv6Address

# NAT64 (RFC 6052) carries an IPv4 address in its last 32 bits; a gateway would forward to it.
_NAT64 = ip_network("64:ff9b::/96")


def is_public_address(address: IPAddress) -> bool:
    """True for a globally routable unicast address.

    ``is_global`` already excludes private, loopback, link-local (169.254.169.254 metadata included),
    unique-local (fd00:ec2::254 metadata included), CGNAT 100.64/10 and unspecified addresses.
    IPv6 forms that embed an IPv4 address are judged by that address.
    """
    if address.version == 6:
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public_address(embedded)
        if address.is_site_local:
            return False
    return address.is_global and not (address.is_multicast or address.is_reserved)


# inet_aton's parts: decimal, octal after a leading 0, hex after 0x
_IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
# a last label that makes a host an IPv4 address or nothing, as the WHATWG URL standard reads it
_NUMBER_LABEL = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")


def parse_ipv4_legacy(host: str) -> IPv4Address | None:
    """The IPv4 address ``host`` spells under inet_aton rules, or None.

    One to four dot-separated parts, each decimal, octal (leading 0) or hex (0x); the last part fills the
    bytes the others leave (``127.1`` is 127.0.0.1, ``2130706433`` is 127.0.0.1). A final dot is allowed,
    as URL parsers allow it.
    """
    parts = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_IPV4_PART.fullmatch(part) for part in parts):
        return None
    values = [_part_value(part) for part in parts]
    *leading, last = values
    if any(value > 0xFF for value in leading) or last >= 1 << (8 * (5 - len(values))):
        return None
    number = last
    for index, value in enumerate(leading):
        number |= value << (8 * (3 - index))
    return IPv4Address(number)


def _part_value(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part[0] == "0":
        return int(part, 8)
    return int(part)


@lru_cache(maxsize=4096)  # literal hosts are checked before every request to them
def _parse_ip(host: str) -> IPAddress | None:
    try:
        return ip_address(host)
    except ValueError:
        return parse_ipv4_legacy(host)


def canonical_host(host: str) -> str:
    """``host`` lower-cased without its final dot, an IP address in its standard spelling."""
    host = host.lower()
    parsed = _parse_ip(host)
    return str(parsed) if parsed is not None else host.rstrip(".")


class AddressGuard:
    """Refuses hosts resolving to non-public addresses, except the hosts in ``allowed_hosts``.

    ``allowed_hosts`` entries are "host" (any port) or "host:port" ("[v6]:port" for IPv6 literals).
    """

    def __init__(self, allowed_hosts: Collection[str] = (), stats: Counter | None = None):
        self._allowed = frozenset(_canonical_entry(h.strip()) for h in allowed_hosts)
        self._stats = stats if stats is not None else Counter()

    def is_allowed_host(self, host: str, port: int | None) -> bool:
        if not self._allowed:
            return False
        host = canonical_host(host)
        bracketed = f"[{host}]" if ":" in host else host
        return host in self._allowed or f"{bracketed}:{port}" in self._allowed

    def check(self, host: str, port: int | None, addresses: Iterable[str]) -> None:
        """Raise ``BlockedAddress`` if any of the addresses ``host`` resolved to is not public."""
        if self.is_allowed_host(host, port):
            return
        for address in addresses:
            parsed = _parse_ip(address)
            if parsed is None or not is_public_address(parsed):
                self._stats["guard/blocked"] += 1
                raise BlockedAddress(f"{host} resolves to the non-public address {address}")

    def check_literal(self, host: str, port: int | None) -> None:
        """Check a host written as an IP address in any spelling (names are checked by ``GuardedResolver``).

        A host whose last label is a number but which is no address (``1.2.3.456``, ``0x1g``) is refused:
        clients disagree on what it names.
        """
        parsed = _parse_ip(host.lower())
        if parsed is not None:
            self.check(host, port, (str(parsed),))
        elif _NUMBER_LABEL.fullmatch(host.rstrip(".").rsplit(".", 1)[-1]):
            self._stats["guard/blocked"] += 1
            raise BlockedAddress(f"{host} ends in a number but is no IPv4 address")


def _canonical_entry(entry: str) -> str:
    """An ``allowed_hosts`` entry with its host canonical: "127.1:8080" allows what "127.0.0.1:8080" does."""
    if entry.startswith("[") or entry.count(":") > 1:
        return entry.lower()
    if ":" not in entry:
        return canonical_host(entry)
    host, port = entry.rsplit(":", 1)
    return f"{canonical_host(host)}:{port}"


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that resolves with ``resolver`` and passes every answer through the guard."""

    def __init__(self, guard: AddressGuard, resolver: AbstractResolver | None = None):
        self._guard = guard
        self._resolver = resolver if resolver is not None else DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        results = await self._resolver.resolve(host, port, family)
        self._guard.check(host, port, (r["host"] for r in results))
        return results

    async def close(self) -> None:
        await self._resolver.close()
