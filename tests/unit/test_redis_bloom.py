"""The shared Bloom filter in a real Redis: atomic check-and-set, racing clients, the in-process layout."""

from __future__ import annotations

import random
import threading
import uuid
from collections import Counter

import pytest
import redis

from bench.bench_bloom import url_for
from bench.redis_bloom import RedisBloomFilter, bloom_positions, contains
from geoweb.dedup import BloomFilter

# Sized far above the items the tests add, so a false positive (probability below 1e-20) cannot flake a test.
EXPECTED = 100_000
HOSTILE = [
    "",
    " ",
    "http://a/\u00e9\u4e2d\U0001f600",
    "http://a/\ud800lone-surrogate",
    "x" * 100_000,
    "\x00\n",
]


@pytest.fixture
def client(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def key(client):
    key = f"test:bloom:{uuid.uuid4().hex}"
    yield key
    client.delete(key)


def urls(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [url_for(rng, uid) for uid in range(n)]


def test_add_is_a_check_and_set(client, key):
    bloom = RedisBloomFilter(client, key, EXPECTED)
    assert bloom.add("http://example.org/a")
    assert not bloom.add("http://example.org/a")
    assert bloom.add_many(["http://example.org/b", "http://example.org/a", "http://example.org/b"]) == [
        True,
        False,
        False,
    ]
    assert bloom.add_many([]) == []


def test_racing_clients_report_each_item_new_exactly_once(redis_url, key):
    items = urls(3000)
    reported: list[list[str]] = [[], []]
    start = threading.Barrier(2)

    def worker(slot: int, order: list[str]) -> None:
        client = redis.Redis.from_url(redis_url)
        bloom = RedisBloomFilter(client, key, EXPECTED)
        start.wait()
        for i in range(0, len(order), 15):
            batch = order[i : i + 15]
            reported[slot].extend(url for url, new in zip(batch, bloom.add_many(batch), strict=True) if new)
        client.close()

    # The same items in both workers, the second in reverse: they meet in the middle and contend there.
    threads = [
        threading.Thread(target=worker, args=(0, items)),
        threading.Thread(target=worker, args=(1, items[::-1])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = Counter(reported[0] + reported[1])
    assert set(counts) == set(items)
    assert set(counts.values()) == {1}
    assert reported[0] and reported[1]  # both won some: the race did happen


def test_bits_are_the_positions_the_client_computes(client, key):
    """The script sets exactly each item's positions and reports new exactly when one was unset, against a
    bit array filled here; sized as the in-process filter is."""
    items = [*urls(2000), *HOSTILE]
    bloom = RedisBloomFilter(client, key, EXPECTED, error_rate=1e-3)
    local = BloomFilter(EXPECTED, error_rate=1e-3)
    assert bloom.num_hashes == local.num_hashes and 0 <= local.num_bits - bloom.num_bits < 8
    bits = bytearray(bloom.num_bytes)
    expected_new = []
    for item in items:
        positions = bloom_positions(item, bloom.num_bits, bloom.num_hashes)
        expected_new.append(not all(bits[p >> 3] & (1 << (p & 7)) for p in positions))
        for p in positions:
            bits[p >> 3] |= 1 << (p & 7)
    assert bloom.add_many(items) == expected_new
    assert client.get(key) == bytes(bits)
    assert all(contains(bytes(bits), item, bloom.num_bits, bloom.num_hashes) for item in items)


def test_no_false_negatives(client, key):
    items = urls(20_000, seed=8)
    bloom = RedisBloomFilter(client, key, len(items), error_rate=0.05)  # a crowded filter: many shared bits
    for i in range(0, len(items), 500):
        bloom.add_many(items[i : i + 500])
    assert not any(bloom.add_many(items))  # every item added is reported seen


def test_a_key_of_another_type_is_a_clear_error_that_changes_nothing(client, key):
    client.rpush(key, "not a filter")
    bloom = RedisBloomFilter(client, key, EXPECTED)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        bloom.add_many(["http://example.org/a"])
    assert client.lrange(key, 0, -1) == [b"not a filter"]


def test_invalid_sizing_is_refused(client, key):
    for expected, rate in ((0, 1e-4), (10, 0), (10, 1)):
        with pytest.raises(ValueError):
            RedisBloomFilter(client, key, expected, rate)
