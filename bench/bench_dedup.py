"""Dedup shared by the workers of a run: the Redis Bloom filter against exact keys in PostGIS.

Two worker processes check a stream of n realistic URLs in batches of 15 (a page's links), batches dealt to
the workers in turn; 80% of the URLs are repeats of earlier ones (the paper: 79% redundant). Every distinct
URL must be reported new exactly once, whichever worker meets it: a distinct URL never reported new is a
false positive (lost), one reported new twice a false negative (fetched twice). Stores:

- the Bloom filter in Redis (``bench/redis_bloom.py``), sized for the distinct URLs at the default error rate;
- exact keys in PostGIS, ``INSERT ... ON CONFLICT DO NOTHING RETURNING url``: a table of (run_id, url) with
  one commit per batch, and the frontier with its real columns inside the page's own transaction (the page's
  row and its links in one commit, as the crawl commits pages), against that transaction without the links.

Wall-clock rates on a shared machine vary; CPU per URL (the worker plus the Redis server or its PostgreSQL
backend, from /proc) is the steadier figure. Memory per URL: Redis ``MEMORY USAGE`` of the key, PostGIS
``pg_total_relation_size`` (heap, TOAST and primary key), each divided by the distinct URLs stored. Starts
PostgreSQL and Redis (``stack``) if they are down and stops what it started; its tables live in a scratch
schema of the ``geoweb`` database, dropped at the end.

    .venv/bin/python -m bench.bench_dedup             # n = 1,000,000 URLs checked, about 2 minutes
    .venv/bin/python -m bench.bench_dedup --n 100000  # smoke run
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import secrets
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

import psycopg2
import redis

from bench.bench_bloom import url_for
from bench.redis_bloom import RedisBloomFilter, contains
from geoweb.dedup.bloom import bloom_size
from geoweb.settings import Settings
from stack import postgres as stack_postgres
from stack import redis as stack_redis
from stack.layout import GEOWEB_DB, REDIS_URL

WORKERS = 2
BATCH = 15
RUN_ID = "scheduled__2026-05-04T00:00:00+00:00"  # an Airflow run id as the frontier would hold it
SHARDS = 64
START_TIMEOUT = 60  # seconds for every worker to connect

Batch = tuple[str, int, list[str]]  # source page, its level, its links
Check = Callable[[Batch], list[str]]  # checks a page's links; returns those reported new
Checker = tuple[Check, int]  # and the pid of the server process doing the work

FRONTIER_COLUMNS = """
    run_id text NOT NULL,
    url text NOT NULL,
    level smallint NOT NULL,
    shard smallint NOT NULL,
    origin text NOT NULL,
    source_page text,
    status text NOT NULL DEFAULT 'queued',
    PRIMARY KEY (run_id, url)
"""
PAGES_COLUMNS = """
    run_id text NOT NULL,
    url text NOT NULL,
    status smallint NOT NULL,
    content_type text,
    fetched_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, url)
"""
INSERT_KEYS = """
    INSERT INTO {schema}.keys (run_id, url) SELECT %s, unnest(%s::text[])
    ON CONFLICT DO NOTHING RETURNING url
"""
INSERT_FRONTIER = """
    INSERT INTO {schema}.frontier (run_id, url, level, shard, origin, source_page)
    SELECT %s, link.url, %s, link.shard, link.origin, %s
    FROM unnest(%s::text[], %s::smallint[], %s::text[]) AS link (url, shard, origin)
    ON CONFLICT DO NOTHING RETURNING url
"""
INSERT_PAGE = (
    "INSERT INTO {schema}.pages (run_id, url, status, content_type) VALUES (%s, %s, 200, 'text/html')"
)


@dataclass
class Workload:
    urls: list[str]  # the distinct URLs, by id
    batches: list[list[int]]  # URL ids, BATCH per page
    pages: list[str]  # the page each batch was found on
    unseen: list[str]  # as many other URLs, never checked

    @classmethod
    def make(cls, n: int, repeats: float, seed: int) -> Workload:
        """A stream of n URL ids in which each id is a repeat of an earlier one with probability ``repeats``."""
        rng = random.Random(seed)
        stream, distinct = [], 0
        for _ in range(n):
            if distinct and rng.random() < repeats:
                stream.append(rng.randrange(distinct))
            else:
                stream.append(distinct)
                distinct += 1
        batches = [stream[i : i + BATCH] for i in range(0, n, BATCH)]
        # Distinct ids make distinct URLs: the checked ones, then a page per batch, then the unseen ones.
        made = [url_for(rng, uid) for uid in range(2 * distinct + len(batches))]
        return cls(made[:distinct], batches, made[distinct : distinct + len(batches)], made[-distinct:])

    def share(self, worker: int) -> list[Batch]:
        """The worker's share of the batches, each with its page (at a level 0-4 of the web)."""
        return [
            (self.pages[index], index % 5, [self.urls[uid] for uid in ids])
            for index, ids in enumerate(self.batches)
            if index % WORKERS == worker
        ]


@dataclass
class Outcome:
    seconds: float
    reported_new: Counter  # URL -> times reported new
    worker_cpu: float  # seconds, in all
    server_cpu: float  # seconds, of the server processes that served the workers

    @property
    def cpu(self) -> float:
        return self.worker_cpu + self.server_cpu


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _work(make_checker: Callable[[], Checker], pages: list[Batch], start, results) -> None:
    try:
        check, server = make_checker()
    except BaseException:
        start.abort()  # the others stop waiting
        raise
    start.wait(timeout=START_TIMEOUT)
    own_start, server_start = time.process_time(), cpu_seconds(server)
    new: list[str] = []
    for page in pages:
        new.extend(check(page))
    results.send((new, time.process_time() - own_start, server, server_start, cpu_seconds(server)))


def run_workers(workload: Workload, make_checker: Callable[[], Checker]) -> Outcome:
    """Runs the workers concurrently (forked: they share the workload); wall time from the common start.

    A worker that fails breaks the start barrier or closes its pipe unanswered: the run raises, never hangs.
    """
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(WORKERS + 1)
    pipes, procs = [], []
    try:
        for worker in range(WORKERS):
            receiver, sender = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_work, args=(make_checker, workload.share(worker), start, sender))
            proc.start()
            sender.close()  # the worker holds the only sending end
            pipes.append(receiver)
            procs.append(proc)
        start.wait(timeout=START_TIMEOUT)
        began = time.perf_counter()
        reported, own, served = Counter(), 0.0, {}
        for receiver in pipes:
            new, worker_cpu, server, before, after = receiver.recv()
            reported.update(new)
            own += worker_cpu
            first, last = served.get(server, (before, after))  # workers may share one server process
            served[server] = (min(first, before), max(last, after))
        seconds = time.perf_counter() - began
    except BaseException:
        for proc in procs:
            proc.terminate()
        raise
    finally:
        for proc in procs:
            proc.join()
    return Outcome(seconds, reported, own, sum(last - first for first, last in served.values()))


# --- checkers: each built in its worker process, with its own connection ---


def bloom_checker(key: str, expected: int, error_rate: float) -> Checker:
    client = redis.Redis.from_url(REDIS_URL)
    bloom = RedisBloomFilter(client, key, expected, error_rate)

    def check(page: Batch) -> list[str]:
        links = page[2]
        return [url for url, new in zip(links, bloom.add_many(links), strict=True) if new]

    return check, client.info("server")["process_id"]


def keys_checker(schema: str) -> Checker:
    conn = psycopg2.connect(GEOWEB_DB)
    sql = INSERT_KEYS.format(schema=schema)

    def check(page: Batch) -> list[str]:
        with conn, conn.cursor() as cur:  # one transaction per batch
            cur.execute(sql, (RUN_ID, _sorted_unique(page[2])))
            return [url for (url,) in cur.fetchall()]

    return check, conn.get_backend_pid()


def page_checker(schema: str, with_links: bool = True) -> Checker:
    """The page's transaction: its row in ``pages`` and, ``with_links``, its links into the frontier."""
    conn = psycopg2.connect(GEOWEB_DB)
    insert_links, insert_page = INSERT_FRONTIER.format(schema=schema), INSERT_PAGE.format(schema=schema)

    def check(page: Batch) -> list[str]:
        source, level, links = page
        with conn, conn.cursor() as cur:
            cur.execute(insert_page, (RUN_ID, source))
            if not with_links:
                return []
            urls = _sorted_unique(links)
            origins = [_origin(url) for url in urls]
            shards = [zlib.crc32(origin.encode()) % SHARDS for origin in origins]
            cur.execute(insert_links, (RUN_ID, level + 1, source, urls, shards, origins))
            return [url for (url,) in cur.fetchall()]

    return check, conn.get_backend_pid()


def _sorted_unique(urls: list[str]) -> list[str]:
    # One lock order for every transaction: two workers inserting overlapping links in different orders
    # would otherwise deadlock on each other's uncommitted keys.
    return sorted(set(urls))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# --- the stores, set up and measured from the parent ---


@contextmanager
def running_stack() -> Iterator[None]:
    """PostgreSQL and Redis up for the bench; stops only what it started."""
    started = [component for component in (stack_postgres, stack_redis) if not component.running()]
    for component in started:
        component.start()
    try:
        yield
    finally:
        for component in started:
            component.stop()


@contextmanager
def scratch_schema() -> Iterator[str]:
    schema = f"bench_dedup_{secrets.token_hex(4)}"
    _sql(f"CREATE SCHEMA {schema}")
    try:
        yield schema
    finally:
        _sql(f"DROP SCHEMA {schema} CASCADE")


def _sql(sql: str) -> list[tuple]:
    with closing(psycopg2.connect(GEOWEB_DB)) as conn, conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall() if cur.description else []


def create_tables(schema: str) -> None:
    _sql(
        f"DROP TABLE IF EXISTS {schema}.keys, {schema}.frontier, {schema}.pages;"
        f"CREATE TABLE {schema}.keys (run_id text NOT NULL, url text NOT NULL, PRIMARY KEY (run_id, url));"
        f"CREATE TABLE {schema}.frontier ({FRONTIER_COLUMNS});"
        f"CREATE TABLE {schema}.pages ({PAGES_COLUMNS});"
    )


def table_size(schema: str, table: str) -> tuple[int, int, int]:
    """(bytes of heap + TOAST + indexes, bytes of the indexes, rows) of a table."""
    name = f"{schema}.{table}"
    ((size, index, rows),) = _sql(
        f"SELECT pg_total_relation_size('{name}'), pg_indexes_size('{name}'), count(*) FROM {name}"
    )
    return size, index, rows


@dataclass
class Row:
    store: str
    outcome: Outcome
    memory: int  # bytes, for the distinct URLs
    index: int | None  # bytes of that in the primary key's index
    stored: int | None  # URLs the store holds afterwards, by its own count (a Bloom filter cannot count)
    note: str = ""


def errors(outcome: Outcome, distinct: int) -> tuple[int, int]:
    """(false positives, false negatives): distinct URLs never reported new, and extra reports."""
    reported = outcome.reported_new
    return distinct - len(reported), sum(reported.values()) - len(reported)


def measure_bloom(workload: Workload, error_rate: float) -> Row:
    distinct = len(workload.urls)
    key = f"bench:dedup:{secrets.token_hex(4)}"
    with closing(redis.Redis.from_url(REDIS_URL)) as client:
        try:
            outcome = run_workers(workload, lambda: bloom_checker(key, distinct, error_rate))
            memory = client.memory_usage(key)
            bits = client.get(key)  # look the unseen URLs up in a copy
        finally:
            client.delete(key)
    num_bits, num_hashes = bloom_size(distinct, error_rate)
    hits = sum(contains(bits, url, num_bits, num_hashes) for url in workload.unseen)
    note = f"{hits / distinct:.1e} of {distinct:,} unseen URLs found; k = {num_hashes}"
    return Row(f"Redis Bloom filter, {error_rate:g}", outcome, memory, None, None, note)


def measure_postgis(workload: Workload) -> list[Row]:
    with scratch_schema() as schema:
        create_tables(schema)
        outcome = run_workers(workload, lambda: keys_checker(schema))
        keys = Row("PostGIS keys (run_id, url), a commit per batch", outcome, *table_size(schema, "keys"))
        alone = run_workers(workload, lambda: page_checker(schema, with_links=False))
        create_tables(schema)
        outcome = run_workers(workload, lambda: page_checker(schema))
        pages, n = len(workload.batches), sum(map(len, workload.batches))
        added = 1e6 * (outcome.cpu - alone.cpu) / n
        note = (
            f"the page's commit alone: {pages / alone.seconds:,.0f} pages/s, with its links: "
            f"{pages / outcome.seconds:,.0f}; the links add {added:.1f} µs of CPU per URL"
        )
        size = table_size(schema, "frontier")
        return [keys, Row("PostGIS frontier in the page's transaction", outcome, *size, note)]


def table(workload: Workload, rows: list[Row]) -> str:
    n, distinct = sum(map(len, workload.batches)), len(workload.urls)
    lines = [
        f"{n:,} URLs checked in batches of {BATCH} by {WORKERS} processes; {distinct:,} distinct "
        f"({1 - distinct / n:.0%} repeats); Python {sys.version.split()[0]}.",
        "",
        "| store | URLs checked/s | CPU per URL: worker + server | memory per URL | of which PK index | stored "
        "| false positives | false negatives | note |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        false_pos, false_neg = errors(row.outcome, distinct)
        index = f"{row.index / distinct:,.1f} B" if row.index is not None else "n/a"
        stored = f"{row.stored:,}" if row.stored is not None else "n/a"
        cpu = f"{1e6 * row.outcome.worker_cpu / n:.1f} + {1e6 * row.outcome.server_cpu / n:.1f}"
        lines.append(
            f"| {row.store} | {n / row.outcome.seconds:,.0f} | {cpu} µs | "
            f"{row.memory / distinct:,.1f} B | {index} | {stored} | {false_pos:,} | {false_neg:,} | {row.note} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="URLs checked in all")
    parser.add_argument("--repeats", type=float, default=0.8, help="share of URLs met before")
    parser.add_argument("--error-rate", type=float, default=Settings().bloom_error_rate)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.n < WORKERS * BATCH or not 0 <= args.repeats < 1 or not 0 < args.error_rate < 1:
        parser.error(f"need --n >= {WORKERS * BATCH}, 0 <= --repeats < 1 and 0 < --error-rate < 1")
    workload = Workload.make(args.n, args.repeats, args.seed)
    with running_stack():
        rows = [measure_bloom(workload, args.error_rate), *measure_postgis(workload)]
    print(table(workload, rows))


if __name__ == "__main__":
    main()
