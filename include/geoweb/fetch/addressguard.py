"""The address guard: no request may reach a private, loopback, link-local or metadata address.

Names are checked inside the connector's resolver, so the connection goes to the very address that was
checked (a second DNS answer cannot rebind the host). Literal IP hosts never reach a resolver and are
checked before the request.
"""

from __future__ import annotations

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


@lru_cache(maxsize=4096)  # literal hosts are checked before every request to them
def _parse_ip(host: str) -> IPAddress | None:
    try:
        return ip_address(host)
    except ValueError:
        return None


class AddressGuard:
    """Refuses hosts resolving to non-public addresses, except the hosts in ``allowed_hosts``.

    ``allowed_hosts`` entries are "host" (any port) or "host:port" ("[v6]:port" for IPv6 literals).
    """

    def __init__(self, allowed_hosts: Collection[str] = (), stats: Counter | None = None):
        self._allowed = frozenset(h.strip().lower() for h in allowed_hosts)
        self._stats = stats if stats is not None else Counter()

    def is_allowed_host(self, host: str, port: int | None) -> bool:
        if not self._allowed:
            return False
        host = host.lower().rstrip(".")
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
        """Check a host written as an IP address (names are checked by ``GuardedResolver``)."""
        if _parse_ip(host) is not None:
            self.check(host, port, (host,))


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
