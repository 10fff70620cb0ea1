"""A Bloom filter sized from the expected number of URLs and a target false-positive rate.

With n items in m bits and k hash functions the false-positive rate is f = (1 - e^(-kn/m))^k; for a
target f the optimum is m = -n ln f / (ln 2)^2 bits and k = (m / n) ln 2. At the default f = 1e-4 that is
19.2 bits (2.4 bytes) per URL and k = 13. A false positive skips a URL; a false negative cannot happen.
"""

from __future__ import annotations

import logging
import math

from rbloom import Bloom

log = logging.getLogger("geoweb.dedup")


def bloom_size(expected_items: int, error_rate: float) -> tuple[int, int]:
    """(bits, hash functions) for ``expected_items`` at ``error_rate``: m = -n ln f / (ln 2)^2, k = (m/n) ln 2."""
    if expected_items < 1 or not 0 < error_rate < 1:
        raise ValueError("expected_items must be >= 1 and 0 < error_rate < 1")
    num_bits = max(8, math.ceil(-expected_items * math.log(error_rate) / math.log(2) ** 2))
    return num_bits, max(1, round(num_bits / expected_items * math.log(2)))


class BloomFilter:
    """The crawl's in-process filter of the URLs seen: rbloom's Bloom filter (Rust; Python's own string hash,
    so it lives and dies with its process), sized by ``bloom_size``'s formula; a link costs a fraction of a
    microsecond to check, where the Python bit loop spent five (a second run of a crawl checks every link of
    every page it carries over)."""

    def __init__(self, expected_items: int, error_rate: float = 1e-4):
        self.expected_items = expected_items
        self.error_rate = error_rate
        # the formula's k, for the error rate it reports: rbloom does not tell the k it uses
        _, self.num_hashes = bloom_size(expected_items, error_rate)
        self._bloom = Bloom(expected_items, error_rate)
        self.num_bits = self._bloom.size_in_bits  # the formula's, rounded up to whole bytes
        self.count = 0  # items added (including the rare false-positive collisions not added)

    def __contains__(self, item: str) -> bool:
        return item in self._bloom

    def add(self, item: str) -> bool:
        """Insert ``item``; True if it was not (probably) present before: an atomic check-and-set."""
        if item in self._bloom:
            return False
        self._bloom.add(item)
        self.count += 1
        if self.count == self.expected_items + 1:
            log.warning(
                "the URL filter is past the %d URLs it was sized for (expected_urls): its false positives, "
                "URLs skipped as seen, rise from %.0e towards %.0e at twice as many", self.expected_items,
                self.error_rate, self.expected_error_rate(2 * self.expected_items),
            )  # fmt: skip
        return True

    @property
    def bytes_per_item(self) -> float:
        return self.num_bits / 8 / self.expected_items

    def expected_error_rate(self, items: int | None = None) -> float:
        n = self.count if items is None else items
        return (1 - math.exp(-self.num_hashes * n / self.num_bits)) ** self.num_hashes
