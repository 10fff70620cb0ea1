"""A Bloom filter sized from the expected number of URLs and a target false-positive rate.

With n items in m bits and k hash functions the false-positive rate is f = (1 - e^(-kn/m))^k; for a
target f the optimum is m = -n ln f / (ln 2)^2 bits and k = (m / n) ln 2. At the default f = 1e-4 that is
19.2 bits (2.4 bytes) per URL and k = 13. A false positive skips a URL; a false negative cannot happen.
The k positions come from one 128-bit BLAKE2b digest by double hashing (Kirsch & Mitzenmacher 2006).
"""

from __future__ import annotations

import logging
import math
from hashlib import blake2b

log = logging.getLogger("geoweb.dedup")


def bloom_size(expected_items: int, error_rate: float) -> tuple[int, int]:
    """(bits, hash functions) for ``expected_items`` at ``error_rate``: m = -n ln f / (ln 2)^2, k = (m/n) ln 2."""
    if expected_items < 1 or not 0 < error_rate < 1:
        raise ValueError("expected_items must be >= 1 and 0 < error_rate < 1")
    num_bits = max(8, math.ceil(-expected_items * math.log(error_rate) / math.log(2) ** 2))
    return num_bits, max(1, round(num_bits / expected_items * math.log(2)))


def bloom_positions(item: str, num_bits: int, num_hashes: int) -> list[int]:
    """The bit positions of ``item``: double hashing of one 128-bit BLAKE2b digest, (h1 + i h2) mod m for
    i < k, each from the one before by adding h2 mod m (no big-integer product: a third faster)."""
    digest = blake2b(item.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    position = int.from_bytes(digest[:8], "little") % num_bits
    step = (int.from_bytes(digest[8:], "little") | 1) % num_bits
    positions = [position]
    for _ in range(num_hashes - 1):
        position = (position + step) % num_bits
        positions.append(position)
    return positions


class BloomFilter:
    def __init__(self, expected_items: int, error_rate: float = 1e-4):
        self.expected_items = expected_items
        self.error_rate = error_rate
        self.num_bits, self.num_hashes = bloom_size(expected_items, error_rate)
        self.bits = bytearray((self.num_bits + 7) // 8)
        self.count = 0  # items added (including the rare false-positive collisions not added)

    def positions(self, item: str) -> list[int]:
        return bloom_positions(item, self.num_bits, self.num_hashes)

    def __contains__(self, item: str) -> bool:
        bits = self.bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self.positions(item))

    def add(self, item: str) -> bool:
        """Insert ``item``; True if it was not (probably) present before: an atomic check-and-set."""
        bits = self.bits
        new = False
        for p in self.positions(item):
            byte, mask = p >> 3, 1 << (p & 7)
            if not bits[byte] & mask:
                bits[byte] |= mask
                new = True
        if new:
            self.count += 1
            if self.count == self.expected_items + 1:
                log.warning(
                    "the URL filter is past the %d URLs it was sized for (expected_urls): its false positives, "
                    "URLs skipped as seen, rise from %.0e towards %.0e at twice as many", self.expected_items,
                    self.error_rate, self.expected_error_rate(2 * self.expected_items),
                )  # fmt: skip
        return new

    @property
    def bytes_per_item(self) -> float:
        return len(self.bits) / self.expected_items

    def expected_error_rate(self, items: int | None = None) -> float:
        n = self.count if items is None else items
        return (1 - math.exp(-self.num_hashes * n / self.num_bits)) ** self.num_hashes
