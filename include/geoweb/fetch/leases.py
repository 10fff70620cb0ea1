"""Per-origin politeness for a whole deployment: leases in Redis, shared by every process of every DAG.

The process-local ``Slot`` (slots.py) stays in front, so a process queues its own requests in memory; inside
it each request holds a lease of its origin. One Lua script grants a lease only while fewer than
``per_host_concurrency`` are held and the origin's next start has come, then pushes the next start by the
delay. Time is the Redis server's clock, the same for every machine. Every lease expires by itself, so a
killed worker never blocks a host for longer than one lease.
"""

from __future__ import annotations

import asyncio
import logging
import secrets

import redis.asyncio as redis
from redis.exceptions import RedisError

from geoweb.errors import LeaseStoreUnavailable
from geoweb.settings import Settings

log = logging.getLogger(__name__)

# Keys: <prefix>{<origin>}:held (sorted set: lease token -> expiry) and <prefix>{<origin>}:next (the time
# of the next allowed start). Times in microseconds of the Redis clock. Returns 0 when the lease is granted,
# the microseconds until the next start when it has not come, and minus those until the oldest lease expires
# when the origin is full (a release may come sooner).
ACQUIRE_SCRIPT = """
local held, next_start = KEYS[1], KEYS[2]
local limit, delay, ttl, token = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
redis.call('ZREMRANGEBYSCORE', held, '-inf', now)
if redis.call('ZCARD', held) >= limit then
  local oldest = redis.call('ZRANGE', held, 0, 0, 'WITHSCORES')
  return now - tonumber(oldest[2])
end
local start = tonumber(redis.call('GET', next_start) or 0)
if start > now then
  return start - now
end
redis.call('ZADD', held, now + ttl, token)
redis.call('PEXPIRE', held, math.ceil(ttl / 1000))
if delay > 0 then
  redis.call('SET', next_start, now + delay, 'PX', math.ceil(delay / 1000))
end
return 0
"""
# A full origin frees a lease on release, which nobody announces: waiters ask again this often (the oldest
# lease's expiry, if sooner, is returned by the script).
FULL_POLL_SECONDS = 0.05
# Redis answers in well under a millisecond; a store that does not answer within this is unreachable.
STORE_TIMEOUT_SECONDS = 5.0
MICROSECONDS = 1_000_000


class HostLeases:
    """The shared leases of every origin, in the Redis at ``url``. Use ``hold(origin, delay)`` per request."""

    def __init__(self, url: str, concurrency: int, lease_seconds: float, *, prefix: str = "geoweb:lease:"):
        self._client = redis.Redis.from_url(
            url, socket_connect_timeout=STORE_TIMEOUT_SECONDS, socket_timeout=STORE_TIMEOUT_SECONDS
        )
        self._acquire = self._client.register_script(ACQUIRE_SCRIPT)
        self._concurrency = concurrency
        self._lease_us = round(lease_seconds * MICROSECONDS)
        self._prefix = prefix

    @classmethod
    def from_settings(cls, settings: Settings) -> HostLeases | None:
        """The leases ``settings.host_leases`` names; None when it names none (per-process politeness)."""
        if not settings.host_leases:
            return None
        # a request never outlives its lease: the total timeout ends it first
        lease_seconds = settings.total_timeout + settings.host_lease_margin
        return cls(settings.host_leases, settings.per_host_concurrency, lease_seconds)

    def hold(self, origin: str, delay: float) -> Lease:
        """One request's lease of ``origin``, with ``delay`` seconds before the next start anywhere."""
        return Lease(self, origin, delay)

    async def acquire(self, origin: str, delay: float) -> str:
        """Wait for a lease of ``origin``; its token. Raises ``LeaseStoreUnavailable``."""
        keys = [f"{self._prefix}{{{origin}}}:held", f"{self._prefix}{{{origin}}}:next"]
        token = secrets.token_hex(8)
        args = [self._concurrency, round(delay * MICROSECONDS), self._lease_us, token]
        while True:
            wait_us = await self._call(origin, self._acquire(keys=keys, args=args))
            if wait_us == 0:
                return token
            # the next start is known exactly; a full origin's next release is not
            await asyncio.sleep(
                wait_us / MICROSECONDS if wait_us > 0 else min(-wait_us / MICROSECONDS, FULL_POLL_SECONDS)
            )

    async def release(self, origin: str, token: str) -> None:
        """Give the lease back; when the store cannot be reached, the lease expires by itself."""
        try:
            await self._client.zrem(f"{self._prefix}{{{origin}}}:held", token)
        except RedisError as exc:
            log.warning("lease of %s not released (it expires by itself): %s", origin, exc)

    async def close(self) -> None:
        await self._client.aclose()

    async def _call(self, origin: str, command):
        try:
            return await command
        except RedisError as exc:
            raise LeaseStoreUnavailable(f"lease store unreachable for {origin}: {exc}") from exc


class Lease:
    """``async with`` one request: the lease is held from the start of the request to its end."""

    __slots__ = ("_delay", "_leases", "_origin", "_token")

    def __init__(self, leases: HostLeases, origin: str, delay: float):
        self._leases = leases
        self._origin = origin
        self._delay = delay
        self._token: str | None = None

    async def __aenter__(self) -> Lease:
        self._token = await self._leases.acquire(self._origin, self._delay)
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._leases.release(self._origin, self._token)
