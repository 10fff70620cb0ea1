"""Crawl speed of ``geoweb crawl`` against Scrapy, both crawling the same synthetic web in the same run.

Both crawlers run as subprocesses with the same concurrency, per-host concurrency, depth and robots.txt rules.
Pages are counted twice: by each crawler's own statistics, and by nginx, whose access log tells how many
distinct generated pages each crawler reached, how many requests it sent, and whether it fetched anything
robots.txt disallows. Prints a Markdown table and the speed ratio; writes the figures to var/bench/.

    .venv/bin/python bench/bench_crawl.py            # 20,000 pages over 8 hosts
    .venv/bin/python bench/bench_crawl.py --quick    # 2,000 pages: a smoke run
    .venv/bin/python bench/bench_crawl.py --crawlers geoweb --profile var/bench/geoweb.prof
    .venv/bin/python bench/bench_crawl.py --services 0.05 --loop-lag   # services-heavy, with the loop's stalls

``--services SHARE`` crawls the services-heavy variant of the web (that share of pages links a capabilities
document; every one is validated by OWSLib in the pool). ``--loop-lag`` then crawls it once more with
geoweb in this process, beside a probe task that wakes every 2 ms and records how late it woke: the largest
lateness is the longest stall of the crawl's event loop. ``--inline-validation`` makes that crawl read
capabilities on the loop itself instead of in the pool, to show what the pool saves.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import io
import json
import os
import pstats
import re
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import synthetic_web
from synthetic_web import DEFAULT_ROOT, PRIVATE_DIR, WebSpec

from geoweb.crawl.jsonl import crawl_to_jsonl
from geoweb.detect import ogc
from geoweb.models import ALL_TYPES
from geoweb.settings import Settings

BENCH = Path(__file__).resolve().parent
CRAWLERS = ("scrapy", "geoweb")
# the last lines of `geoweb crawl`'s report on stderr
_GEOWEB_TOTALS = re.compile(
    r"^\s*all\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+[\d.]+\s+([\d.]+)\s*$", re.M
)  # urls, failures, secs


@dataclass
class ServedCounts:
    """What nginx served to one crawler, from its access log."""

    requests: int = 0
    pages_reached: int = 0  # distinct generated pages answered 200
    duplicate_fetches: int = 0  # requests for a URL already requested in this run
    robots_fetches: int = 0
    disallowed_fetches: int = 0  # requests robots.txt forbids
    not_found: int = 0
    server_errors: int = 0  # 5xx: the web failed, not the crawler


@dataclass
class RunResult:
    crawler: str
    pages_reported: int  # the crawler's own count
    failures_reported: int
    crawl_seconds: float  # the crawler's own clock
    wall_seconds: float  # the whole process, start-up included
    cpu_seconds: float
    peak_rss_mb: float
    served: ServedCounts

    @property
    def pages_per_second(self) -> float:
        return self.served.pages_reached / self.wall_seconds


def count_served(log_lines: list[str], page_urls: set[str]) -> ServedCounts:
    """Counts one run's access-log lines, written as ``<server address>:<port> <request uri> <status>``."""
    counts = ServedCounts(requests=len(log_lines))
    seen: Counter = Counter()
    reached = set()
    for line in log_lines:
        netloc, _, rest = line.partition(" ")
        uri, _, status = rest.rpartition(" ")
        url = f"http://{netloc}{uri}"
        seen[url] += 1
        if uri == "/robots.txt":
            counts.robots_fetches += 1
        elif uri.startswith(PRIVATE_DIR):
            counts.disallowed_fetches += 1
        if status == "404":
            counts.not_found += 1
        elif status.startswith("5"):
            counts.server_errors += 1
        elif status == "200" and url in page_urls:
            reached.add(url)
    counts.pages_reached = len(reached)
    counts.duplicate_fetches = sum(n - 1 for n in seen.values())
    return counts


def run_measured(
    name: str, cmd: list[str], env: dict[str, str], root: Path
) -> tuple[str, str, float, object]:
    """Runs ``cmd``; returns its stdout, stderr, wall seconds and resource usage (its own, via wait4)."""
    out_path, err_path = root / f"{name}.stdout", root / f"{name}.stderr"
    with out_path.open("w") as out, err_path.open("w") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4, so Popen must not wait again
    stdout, stderr = out_path.read_text(), err_path.read_text()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} exited with {proc.returncode}:\n{stderr[-3000:]}")
    return stdout, stderr, wall, usage


def scrapy_command(spec: WebSpec, args) -> list[str]:
    cmd = [sys.executable, str(BENCH / "scrapy_reference.py"), "--max-level", str(args.max_level)]
    cmd += ["--concurrency", str(args.concurrency), "--per-host", str(args.per_host)]
    for seed, netloc in zip(spec.seeds(), spec.netlocs(), strict=True):
        cmd += ["--seed", seed, "--allow", netloc]
    return cmd


def geoweb_command(spec: WebSpec, args) -> list[str]:
    geoweb = Path(sys.executable).parent / "geoweb"
    if args.profile:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(args.profile), "-m", "geoweb.cli"]
    else:
        cmd = [str(geoweb)]
    cmd += ["--log-level", "WARNING", "crawl", "--max-level", str(args.max_level), "--output", os.devnull]
    cmd += ["--concurrency", str(args.concurrency), "--per-host-concurrency", str(args.per_host)]
    for h in range(spec.hosts):
        cmd += ["--seed", spec.seeds()[h], "--allow-host", spec.address(h)]
    return cmd


def parse_scrapy(stdout: str, stderr: str) -> tuple[int, int, float]:
    result = json.loads(stdout.strip().splitlines()[-1])
    return result["pages"], result["failures"], result["seconds"]


def parse_geoweb(stdout: str, stderr: str) -> tuple[int, int, float]:
    m = _GEOWEB_TOTALS.search(stderr)
    if not m:
        raise RuntimeError(f"no totals row in the geoweb crawl report:\n{stderr[-3000:]}")
    return int(m.group(1)), int(m.group(2)), float(m.group(3))


PARSERS = {"scrapy": parse_scrapy, "geoweb": parse_geoweb}


def run_crawler(name: str, spec: WebSpec, args, page_urls: set[str]) -> RunResult:
    """One crawl against a freshly started nginx, whose access log then holds exactly this crawl."""
    command = scrapy_command(spec, args) if name == "scrapy" else geoweb_command(spec, args)
    env = dict(os.environ, GEOWEB_MAX_PAGES_PER_HOST=str(spec.pages))  # the host budget must not cut the web
    with synthetic_web.serving(spec, args.root, log_requests=True):
        stdout, stderr, wall, usage = run_measured(name, command, env, args.root)
    served = count_served(synthetic_web.access_log(args.root).read_text().splitlines(), page_urls)
    pages, failures, seconds = PARSERS[name](stdout, stderr)
    return RunResult(
        crawler=name,
        pages_reported=pages,
        failures_reported=failures,
        crawl_seconds=seconds,
        wall_seconds=round(wall, 3),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
        served=served,
    )


def markdown(results: list[RunResult], spec: WebSpec, args) -> str:
    rows = [
        f"Web: {spec.pages:,} pages over {spec.hosts} hosts; concurrency {args.concurrency}, "
        f"per host {args.per_host}; depth {args.max_level}; robots.txt obeyed; {os.cpu_count()} CPUs.",
        "",
        "| crawler | pages (own stats) | failures (own) | pages reached (nginx) | requests | duplicates "
        "| robots.txt | disallowed | crawl s | wall s | pages/s | CPU s | CPU ms/page | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r.served
        rows.append(
            f"| {r.crawler} | {r.pages_reported:,} | {r.failures_reported:,} | {s.pages_reached:,} | {s.requests:,} | "
            f"{s.duplicate_fetches} | {s.robots_fetches} | {s.disallowed_fetches} | {r.crawl_seconds:.1f} | "
            f"{r.wall_seconds:.1f} | {r.pages_per_second:,.0f} | {r.cpu_seconds:.1f} | "
            f"{1000 * r.cpu_seconds / max(1, s.pages_reached):.2f} | {r.peak_rss_mb:.0f} |"
        )
    by_name = {r.crawler: r for r in results if r.served.pages_reached}
    if len(by_name) == 2:
        ratio = by_name["geoweb"].pages_per_second / by_name["scrapy"].pages_per_second
        cpu = by_name["scrapy"].cpu_seconds / by_name["scrapy"].served.pages_reached
        cpu /= by_name["geoweb"].cpu_seconds / by_name["geoweb"].served.pages_reached
        rows += [
            "",
            f"geoweb / Scrapy: **{ratio:.1f}x** pages per second (wall clock, start-up included); "
            f"{cpu:.1f}x less CPU per page.",
        ]
    return "\n".join(rows)


class InlineValidation:
    """The validation pool's interface, reading on the event loop itself (the stall the pool avoids)."""

    async def read(self, body: bytes, url: str, max_bytes: int):
        return ogc.read_capabilities(body, url, max_bytes=max_bytes)


STALL_SAMPLE = 0.05  # seconds late at which the watchdog samples where the loop is


def where_stalled(frame) -> str:
    """The innermost frame of a stack that is the project's or the benchmark's: where a stall came from."""
    for entry in reversed(traceback.extract_stack(frame)):
        if "/geoweb/" in entry.filename or entry.filename.endswith("bench_crawl.py"):
            return f"{Path(entry.filename).name}:{entry.lineno} {entry.name}"
    return "outside the project"


async def crawl_with_lag_probe(spec: WebSpec, args, interval: float = 0.002) -> dict:
    """A geoweb crawl in this process beside a task that sleeps ``interval`` and records how late it wakes,
    and a watchdog thread that, while the task is late by STALL_SAMPLE or more, samples where the loop is."""
    loop = asyncio.get_running_loop()
    wakes: list[tuple[float, float]] = []  # (seconds late, the loop thread's CPU seconds meanwhile) of each
    woke = [time.monotonic()]
    sites: dict[str, float] = {}  # where the loop was -> the longest stall seen there
    crawling = threading.Event()
    loop_thread = threading.get_ident()

    async def probe() -> None:
        while True:
            started, cpu = loop.time(), time.thread_time()
            await asyncio.sleep(interval)
            wakes.append((loop.time() - started - interval, time.thread_time() - cpu))
            woke[0] = time.monotonic()

    def watchdog() -> None:
        while crawling.is_set():
            time.sleep(0.01)
            late = time.monotonic() - woke[0]
            if late >= STALL_SAMPLE:
                site = where_stalled(sys._current_frames().get(loop_thread))
                sites[site] = max(late, sites.get(site, 0.0))

    settings = Settings.from_env(
        max_level=args.max_level,
        concurrency=args.concurrency,
        per_host_concurrency=args.per_host,
        allowed_hosts=frozenset(spec.address(h) for h in range(spec.hosts)),
        max_pages_per_host=spec.pages,
    )
    collections: dict[int, list[float]] = {0: [], 1: [], 2: []}  # generation -> pauses, seconds
    collecting = [0.0]

    def timed_collection(phase: str, info: dict) -> None:
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            collections[info["generation"]].append(time.perf_counter() - collecting[0])

    probing = asyncio.create_task(probe())
    crawling.set()
    threading.Thread(target=watchdog, daemon=True).start()
    gc.callbacks.append(timed_collection)
    started = time.perf_counter()
    try:
        report = await crawl_to_jsonl(spec.seeds(), settings, ALL_TYPES, io.StringIO())
    finally:
        gc.callbacks.remove(timed_collection)
        crawling.clear()
        probing.cancel()
    wakes.sort()
    lags = [lag for lag, _ in wakes]
    return {
        "seconds": time.perf_counter() - started,
        "resources": dict(report.resources_by_type),
        "ogc_misses": {k: v for k, v in report.stats.items() if k.startswith("ogc/") and k != "ogc/probe"},
        "max_stall_ms": 1000 * lags[-1],
        "p99_stall_ms": 1000 * lags[int(0.99 * (len(lags) - 1))],
        "wakes": len(lags),
        "gc_pauses": {  # the interpreter's cyclic garbage collections, each a pause of the loop thread
            f"generation {g}": {
                "n": len(t),
                "max_ms": round(1000 * max(t, default=0.0), 1),
                "total_ms": round(1000 * sum(t)),
            }
            for g, t in collections.items()
        },
        "longest_stalls_ms": [(round(1000 * lag, 1), round(1000 * cpu, 1)) for lag, cpu in wakes[-10:]],
        "stall_sites_ms": {
            site: round(1000 * late) for site, late in sorted(sites.items(), key=lambda kv: -kv[1])
        },
    }


def print_profile(path: Path, top: int = 15) -> None:
    """Top functions by own time, then the project's functions by time including callees."""
    print(f"\ngeoweb crawl under cProfile (which slows it about 2.5x): top {top} by own time")
    pstats.Stats(str(path)).sort_stats("tottime").print_stats(top)
    print(f"top {top} geoweb functions by cumulative time")
    pstats.Stats(str(path)).sort_stats("cumulative").print_stats("/geoweb/", top)


def main() -> None:
    defaults, settings = WebSpec(), Settings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=defaults.pages)
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--quick", action="store_true", help="a smoke run on 2,000 pages")
    parser.add_argument("--concurrency", type=int, default=settings.concurrency)
    parser.add_argument("--per-host", type=int, default=settings.per_host_concurrency)
    parser.add_argument("--max-level", type=int, default=settings.max_level)
    parser.add_argument("--crawlers", default=",".join(CRAWLERS), help="comma list (default: both)")
    parser.add_argument("--profile", type=Path, help="run geoweb under cProfile, writing stats here")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--services", type=float, default=0.0, help="share of pages linking capabilities")
    parser.add_argument("--loop-lag", action="store_true", help="then measure the event loop's stalls")
    parser.add_argument("--inline-validation", action="store_true", help="loop-lag crawl without the pool")
    args = parser.parse_args()
    crawlers = [c.strip() for c in args.crawlers.split(",") if c.strip()]
    if not crawlers or set(crawlers) - set(CRAWLERS):
        parser.error(f"--crawlers takes a comma list of {', '.join(CRAWLERS)}")
    spec = WebSpec(pages=2000 if args.quick else args.pages, hosts=args.hosts, services=args.services)
    with synthetic_web.serving(spec, args.root, log_requests=True) as manifest:
        page_urls = synthetic_web.page_urls(spec)
        print(
            f"web: {manifest['pages']:,} pages, {manifest['links']:,} links; levels {manifest['pages_per_level']}; "
            f"{manifest['capabilities_links']:,} links to capabilities documents"
        )
        results = []
        for name in crawlers:
            print(f"crawling with {name}...", flush=True)
            results.append(run_crawler(name, spec, args, page_urls))
    table = markdown(results, spec, args)
    print(table)
    for r in results:
        s = r.served
        if s.pages_reached != spec.pages or s.disallowed_fetches or s.server_errors:
            print(f"WARNING: {r.crawler} reached {s.pages_reached:,} of {spec.pages:,} pages, fetched "
                  f"{s.disallowed_fetches} disallowed URLs, got {s.server_errors} server errors")  # fmt: skip
    out = args.root / f"results-{spec.pages}x{spec.hosts}.json"
    out.write_text(json.dumps([asdict(r) for r in results], indent=1))
    print(f"figures: {out}")
    if args.profile:
        print_profile(args.profile)
    if args.loop_lag:
        if args.inline_validation:
            ogc.validation_pool = lambda settings: InlineValidation()
        with synthetic_web.serving(spec, args.root):
            lag = asyncio.run(crawl_with_lag_probe(spec, args))
        how = "on the loop (no pool)" if args.inline_validation else "in the validation pool"
        print(f"event loop during a geoweb crawl, capabilities read {how}: largest stall "
              f"{lag['max_stall_ms']:.1f} ms, p99 {lag['p99_stall_ms']:.1f} ms over {lag['wakes']:,} probe wakes; "
              f"{lag['seconds']:.1f} s; resources {lag['resources']}; OGC misses {lag['ogc_misses']}")  # fmt: skip
        print(
            "garbage collections:",
            ", ".join(f"{g}: {f['n']} (max {f['max_ms']} ms)" for g, f in lag["gc_pauses"].items()),
        )
        print(
            "the longest stalls, ms late, and of them the loop thread's CPU time (the rest it waited for a core"
            " or the GIL):",
            ", ".join(f"{late} ({cpu})" for late, cpu in reversed(lag["longest_stalls_ms"])),
        )
        print(
            f"where the loop was when {STALL_SAMPLE * 1000:.0f} ms late or more (the longest stall there, ms):"
        )
        for site, late in list(lag["stall_sites_ms"].items())[:8]:
            print(f"  {late:>5}  {site}")


if __name__ == "__main__":
    main()
