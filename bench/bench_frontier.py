"""The crawl frontier's size and speed at scale: bytes per URL of the ``frontier`` table, heap and each index,
and the time of its commits and of a level's planning, through the store's own code.

A synthetic run of N URLs (default 1,000,000) over 1,000 hosts in 16 shards is crawled level by level as the
harvest does it, without the network: each level's shards are planned (``Frontier.pending_shards``), read
(``pending_urls``, ``origin_counts``) and their pages committed 50 at a time (``commit_pages``, the size of a
shard's page buffer), each page fetched (3 % failed) with 12 scored links, 5 of them new to the run, 7
already in it. URLs are 40 to 87 bytes long (60 on average). Levels fill until N URLs are known; the last
level's URLs stay 'discovered', as those of a crawl that stops at its maximum level. The database is a scratch
database of the local PostgreSQL (dropped afterwards), vacuumed before sizes are read; then the run's recall
curve (``Runs.recall_curve``) and the link budget of its largest level (``Frontier.skip_over_budget``) are timed.

    .venv/bin/python -m bench.bench_frontier                 # 1,000,000 URLs, about 2 minutes
    .venv/bin/python -m bench.bench_frontier --urls 100000   # about 15 s
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from geoweb.errors import FetchTimeout
from geoweb.links.normalize import origin
from geoweb.models import Link, Page
from geoweb.store import Store
from stack import postgres as stack_postgres

RUN_ID = "manual__2026-12-02T04:33:12.123456+00:00"  # an Airflow run id as the harvest records it
HOSTS = 1000
SHARDS = 16
SEEDS = 100
LINKS_NEW = 5  # links per page new to the run
LINKS_SEEN = 7  # links per page to URLs the run has already
FAILED = 0.03
BATCH = 50  # pages per commit, as harvest.crawl's PageBuffer
WORDS = (
    "data", "maps", "rivers", "wms", "services", "catalogue", "geoportal", "download", "elevation", "land-cover",
    "boundaries", "metadata", "news", "about", "events", "archive", "2024", "reports", "layers", "kml",
)  # fmt: skip
RESULTS = Path("var/bench/results-frontier.json")


@dataclass
class Figures:
    urls: int = 0
    pages: int = 0
    levels: list[int] = field(default_factory=list)  # URLs per level
    commit_ms_per_1000_urls: float = 0.0  # commit time per 1,000 new URLs (links and outcomes included)
    commit_ms_per_batch_p50: float = 0.0
    pending_shards_ms: list[float] = field(default_factory=list)  # per level
    pending_urls_ms_p50: float = 0.0  # per shard
    pending_urls_ms_max: float = 0.0
    origin_counts_ms_p50: float = 0.0
    skip_over_budget_s: float = 0.0  # the link budget of the largest level, at 0.5
    recall_curve_s: float = 0.0  # the run's recall curve, read from its frontier
    total_bytes: int = 0
    relations: dict[str, int] = field(default_factory=dict)  # heap, TOAST and each index, in bytes

    @property
    def bytes_per_url(self) -> dict[str, float]:
        return {name: size / self.urls for name, size in self.relations.items()}


class SyntheticWeb:
    """Deterministic URLs on ``HOSTS`` hosts: 40 to 87 bytes long, 60 on average."""

    def __init__(self, seed: int = 16):
        self.random = random.Random(seed)
        self.count = 0

    def url(self) -> str:
        self.count += 1
        r = self.random
        host = f"http://h{r.randrange(HOSTS):04d}.example.org"
        words = "-".join(r.choice(WORDS) for _ in range(r.randint(1, 3)))
        path = f"/{r.choice(WORDS)}/{words}-{self.count}.html"
        query = f"?page={r.randint(1, 99)}" if r.random() < 0.2 else ""
        return host + path + query


def crawl(store: Store, web: SyntheticWeb, urls: int) -> Figures:
    figures = Figures()
    known: list[str] = [web.url() for _ in range(SEEDS)]
    store.runs.begin(RUN_ID, {"bench": "frontier"})
    store.frontier.add_urls(RUN_ID, 0, [(url, None, "rivers") for url in known], SHARDS)
    figures.levels.append(len(known))
    commit_seconds, batch_seconds, read_seconds, origin_seconds = 0.0, [], [], []
    level = 0
    while len(known) < urls:
        started = time.perf_counter()
        shards = store.frontier.pending_shards(RUN_ID, level)
        figures.pending_shards_ms.append(round((time.perf_counter() - started) * 1000, 1))
        added = 0
        for shard in shards:
            started = time.perf_counter()
            items = list(store.frontier.pending_urls(RUN_ID, level, shard))
            read_seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            store.frontier.origin_counts(RUN_ID, shard, sorted({origin(url) for url, *_ in items}))
            origin_seconds.append(time.perf_counter() - started)
            keyword_of = {url: keyword for url, _, keyword, _ in items}
            for first in range(0, len(items), BATCH):
                pages = []
                for url, source, _, _ in items[first : first + BATCH]:
                    if len(known) >= urls:
                        break
                    if web.random.random() < FAILED:
                        pages.append(Page(url, source, level, error=FetchTimeout(f"{url}: timed out")))
                        continue
                    new = [web.url() for _ in range(min(LINKS_NEW, urls - len(known)))]
                    seen = web.random.sample(known, min(LINKS_SEEN, len(known)))
                    known.extend(new)
                    added += len(new)
                    links = [Link(link, url, round(web.random.random(), 3)) for link in new + seen]
                    pages.append(Page(url, source, level, links=links))
                if not pages:
                    break
                started = time.perf_counter()
                store.frontier.commit_pages(RUN_ID, pages, SHARDS, keyword_of)
                batch_seconds.append(time.perf_counter() - started)
                figures.pages += len(pages)
        commit_seconds = sum(batch_seconds)
        figures.levels.append(added)
        level += 1
        print(f"level {level}: {added:,} URLs; {len(known):,} in all", flush=True)
    figures.urls = len(known)
    figures.commit_ms_per_1000_urls = round(commit_seconds * 1000 / (figures.urls / 1000), 1)
    figures.commit_ms_per_batch_p50 = round(statistics.median(batch_seconds) * 1000, 1)
    figures.pending_urls_ms_p50 = round(statistics.median(read_seconds) * 1000, 1)
    figures.pending_urls_ms_max = round(max(read_seconds) * 1000, 1)
    figures.origin_counts_ms_p50 = round(statistics.median(origin_seconds) * 1000, 1)
    return figures


def relation_sizes(store: Store) -> tuple[int, dict[str, int]]:
    """The frontier's total size, and the size of its heap (with TOAST) and of each of its indexes."""
    store.conn.autocommit = True
    with store.conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE frontier")
        cur.execute("SELECT pg_total_relation_size('frontier'), pg_table_size('frontier')")
        total, heap = cur.fetchone()
        cur.execute(
            "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid) FROM pg_index "
            "WHERE indrelid = 'frontier'::regclass ORDER BY 1"
        )
        indexes = dict(cur.fetchall())
    store.conn.autocommit = False
    return total, {"heap": heap, **indexes}


def table(figures: Figures) -> str:
    lines = ["| relation | MB | bytes per URL |", "|---|---:|---:|"]
    for name, size in figures.relations.items():
        lines.append(f"| {name} | {size / 1e6:,.1f} | {size / figures.urls:,.1f} |")
    lines.append(
        f"| **total** | {figures.total_bytes / 1e6:,.1f} | **{figures.total_bytes / figures.urls:,.1f}** |"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="URLs in the run (default 1,000,000)")
    args = parser.parse_args()
    with stack_postgres.scratch_database("geoweb_bench") as dsn, Store(dsn) as store:
        store.migrate()
        started = time.monotonic()
        figures = crawl(store, SyntheticWeb(), args.urls)
        seconds = time.monotonic() - started
        figures.total_bytes, figures.relations = relation_sizes(store)
        started = time.perf_counter()
        store.runs.recall_curve(RUN_ID)
        figures.recall_curve_s = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        store.frontier.skip_over_budget(RUN_ID, len(figures.levels) - 1, 0.5, float("-inf"))
        figures.skip_over_budget_s = round(time.perf_counter() - started, 2)
    print(table(figures))
    print(
        f"{figures.urls:,} URLs at levels {figures.levels}, {figures.pages:,} pages committed in {seconds:.0f} s; "
        f"commit {figures.commit_ms_per_1000_urls} ms per 1,000 URLs (p50 {figures.commit_ms_per_batch_p50} ms "
        f"per batch of {BATCH} pages); pending_shards per level {figures.pending_shards_ms} ms; pending_urls "
        f"per shard p50 {figures.pending_urls_ms_p50} ms, max {figures.pending_urls_ms_max} ms; origin_counts "
        f"p50 {figures.origin_counts_ms_p50} ms; recall curve {figures.recall_curve_s} s; link budget of the "
        f"largest level {figures.skip_over_budget_s} s"
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(asdict(figures) | {"seconds": round(seconds, 1)}, indent=2))


if __name__ == "__main__":
    main()
