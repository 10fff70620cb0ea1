"""Helpers of the politeness tests: the Redis database the shared-lease tests use, and what a log of
request (start, end) times says about a host's load."""

from __future__ import annotations

import itertools

import pytest
import redis

from stack.layout import REDIS_PORT

LEASES_URL = f"redis://127.0.0.1:{REDIS_PORT}/3"  # apart from the tests' 0, the broker's 1, the stack's 2


def leases_client() -> redis.Redis:
    """A client of LEASES_URL; the test is skipped when the stack's Redis is not running."""
    client = redis.Redis.from_url(LEASES_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        client.close()
        pytest.skip(
            f"the stack's Redis is not running on port {REDIS_PORT} (.venv/bin/python -m stack start redis)"
        )
    return client


def peak_in_flight(spans: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    return max(itertools.accumulate(step for _, step in events))


def closest_starts(spans: list[tuple[float, float]]) -> float:
    return min(b - a for a, b in itertools.pairwise(sorted(start for start, _ in spans)))
