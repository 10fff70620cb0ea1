"""The paper's Bloom filter as a structure shared by all workers: its bits in one Redis string.

Sized as ``geoweb.dedup.BloomFilter`` is (``bloom_size``). The client computes an item's k positions by
double hashing of one 128-bit BLAKE2b digest (Kirsch & Mitzenmacher 2006), the same in every process, and
one Lua script sets them with SETBIT, so the check-and-set of an item is atomic however many workers race on
it. Bit p is stored at Redis offset p ^ 7 (SETBIT counts bits from the high end of a byte), so the Redis
string read back is a bit array with bit p at byte p >> 3, bit p & 7: ``contains`` looks items up in it. A
Redis string holds at most 2^32 bits (512 MB): about 224 million URLs at an error rate of 1e-4.
"""

from __future__ import annotations

from collections.abc import Iterable
from hashlib import blake2b

import redis

from geoweb.dedup.bloom import bloom_size

# ARGV = k, the size in bytes, then k offsets per item; returns 1 per item if any of its bits was 0 (new),
# else 0 (seen). The first call creates the whole string at once: SETBIT grows a string by doubling it, which
# would leave up to half of its memory unused.
_CHECK_AND_SET = """
local k = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], string.rep('\\0', tonumber(ARGV[2])))
end
local new = {}
for first = 3, #ARGV, k do
  local unseen = 0
  for i = first, first + k - 1 do
    if redis.call('SETBIT', KEYS[1], ARGV[i], 1) == 0 then unseen = 1 end
  end
  new[#new + 1] = unseen
end
return new
"""


def bloom_positions(item: str, num_bits: int, num_hashes: int) -> list[int]:
    """The bit positions of ``item``: (h1 + i h2) mod m for i < k, h1 and h2 the halves of its digest."""
    digest = blake2b(item.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    position = int.from_bytes(digest[:8], "little") % num_bits
    step = (int.from_bytes(digest[8:], "little") | 1) % num_bits
    positions = [position]
    for _ in range(num_hashes - 1):
        position = (position + step) % num_bits
        positions.append(position)
    return positions


def contains(bits: bytes, item: str, num_bits: int, num_hashes: int) -> bool:
    """Whether ``item`` is (probably) in a filter's bits as read from Redis."""
    return all(bits[p >> 3] & (1 << (p & 7)) for p in bloom_positions(item, num_bits, num_hashes))


class RedisBloomFilter:
    def __init__(self, client: redis.Redis, key: str, expected_items: int, error_rate: float = 1e-4):
        # The in-process filter's sizing; positions of its own, the same in every worker.
        self.client = client
        self.key = key
        self.num_bits, self.num_hashes = bloom_size(expected_items, error_rate)
        self.num_bytes = (self.num_bits + 7) // 8
        self._script = client.register_script(_CHECK_AND_SET)  # EVALSHA, reloaded if the cache was flushed

    def offsets(self, item: str) -> list[int]:
        """The Redis bit offsets of ``item``: its positions in SETBIT's bit order."""
        return [p ^ 7 for p in bloom_positions(item, self.num_bits, self.num_hashes)]

    def add(self, item: str) -> bool:
        """Insert ``item``; True if it was not (probably) present before."""
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str]) -> list[bool]:
        """Insert ``items`` (a page's links) in one script call; per item, True if it was new.

        Items are checked in order, so a repeat within the batch is reported seen.
        """
        args: list[int] = [self.num_hashes, self.num_bytes]
        for item in items:
            args.extend(self.offsets(item))
        if len(args) == 2:
            return []
        return [bool(flag) for flag in self._script(keys=[self.key], args=args)]
