"""The paper's Bloom filter as a structure shared by all workers: its bits in one Redis string.

Sizing and the k positions are those of ``geoweb.dedup.BloomFilter``; the client computes the positions and
one Lua script sets them with SETBIT, so the check-and-set of an item is atomic however many workers race on
it. Bit p is stored at Redis offset p ^ 7: SETBIT counts bits from the high end of a byte, the in-process
filter from the low end, so the Redis string is byte for byte the in-process filter's bit array. A Redis
string holds at most 2^32 bits (512 MB): about 224 million URLs at an error rate of 1e-4.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from geoweb.dedup.bloom import bloom_positions, bloom_size

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


class RedisBloomFilter:
    def __init__(self, client: redis.Redis, key: str, expected_items: int, error_rate: float = 1e-4):
        # The same sizing and positions as the in-process filter, so the bits are the same.
        self.client = client
        self.key = key
        self.num_bits, self.num_hashes = bloom_size(expected_items, error_rate)
        self.num_bytes = (self.num_bits + 7) // 8
        self._script = client.register_script(_CHECK_AND_SET)  # EVALSHA, reloaded if the cache was flushed

    def offsets(self, item: str) -> list[int]:
        """The Redis bit offsets of ``item``: the in-process filter's positions in SETBIT's bit order."""
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
