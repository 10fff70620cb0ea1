"""A second run of an unchanged web (issue 29): what ``geoweb crawl --state`` saves when nothing changed.

The synthetic web of ``bench_crawl.py`` (its services-heavy variant: a share of pages links a capabilities
document, each validated by OWSLib in the pool) is crawled twice with one state file. Half of its hosts
send validators, as nginx does for static files (ETag and Last-Modified, a 304 to If-None-Match or
If-Modified-Since); the other half send none and ignore the conditions, so the second run re-downloads
their pages and recognises them by their SHA-256. Each run is a subprocess of its own (a fresh interpreter,
as a scheduled ``geoweb crawl`` would be): its wall time and CPU come from ``wait4``, start-up included,
with the validation pool's workers, which it reaps at exit. nginx is restarted for each run, so its access
log holds exactly one run.

Prints a table per run, the ratios second/first against the issue's targets, and exits 1 when a target is
missed (after writing everything under var/bench/).

    .venv/bin/python -m bench.bench_recrawl              # 100,000 pages over 8 hosts
    .venv/bin/python -m bench.bench_recrawl --quick      # 5,000 pages: a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench import synthetic_web
from bench.synthetic_web import DEFAULT_ROOT, WebSpec
from geoweb.settings import Settings

# nginx sends ETag and Last-Modified for static files and answers conditions with 304 by default. Without
# validators: `etag off` drops the ETag; `ssi on` for every type drops Last-Modified (SSI output may
# differ from the file, and no page holds an SSI command, so the bytes are the file's); `if_modified_since
# off` keeps the 304 away, since nginx checks the condition before SSI drops the header.
NO_VALIDATORS = "etag off; if_modified_since off; ssi on; ssi_types *;"
# issue 29: second run / first run at most
TARGETS = {"requests": 0.60, "bytes read": 0.15, "wall s": 0.35, "CPU s": 0.30}


def without_validators(spec: WebSpec) -> range:
    """The hosts that send no validators: the odd ones, so each half has as many pages."""
    return range(1, spec.hosts, 2)


@dataclass
class Run:
    """One crawl, by the crawler's stats, nginx's access log and wait4."""

    run: int
    requests: int  # the crawler's fetch/requests
    body_bytes: int  # the crawler's fetch/bytes: bodies read
    not_modified: int  # unchanged/not_modified: a 304, carried over
    same_bytes: int  # unchanged/same_bytes: read again, the same signature, carried over
    not_due: int  # unchanged/not_due: left out by the revisit budget, carried over unasked
    deferred: int  # defer/*: left to a later run (the memory bound among them)
    crawl_seconds: float  # crawl_to_jsonl alone
    wall_seconds: float  # the process, start-up included
    cpu_seconds: float  # the process and its validation workers
    peak_rss_mb: float
    served: dict[str, int] = field(default_factory=dict)  # nginx: requests by status
    resources: dict[str, int] = field(default_factory=dict)  # lines by type
    verdicts: dict[str, int] = field(default_factory=dict)  # lines by verdict
    keys: int = 0  # distinct (url, type) listed


def settings_for(spec: WebSpec, args) -> Settings:
    return Settings.from_env(
        max_level=args.max_level,
        concurrency=args.concurrency,
        per_host_concurrency=args.per_host,
        allowed_hosts=frozenset(spec.address(h) for h in range(spec.hosts)),
        max_pages_per_host=spec.pages,  # the host budget must not cut the web
        # the 400 MB default defers a third of a 100,000-page first run: the state's links count against it
        max_memory_bytes=args.max_memory_mb * 2**20,
    )


def crawl_once(spec: WebSpec, args) -> None:
    """The child: one crawl with the state file; its stats as JSON on stdout."""
    from geoweb.crawl.jsonl import crawl_to_jsonl
    from geoweb.crawl.pagestates import PageStates
    from geoweb.models import ALL_TYPES

    states = PageStates(args.state)
    if states.known and args.revisit_share < 1:  # a later run: the revisit budget chooses what it asks
        states.revisit_budget = round(args.revisit_share * len(states.known))
    started = time.perf_counter()
    with args.output.open("w", encoding="utf-8") as out:
        report = asyncio.run(crawl_to_jsonl(spec.seeds(), settings_for(spec, args), ALL_TYPES, out, states))
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "stats": dict(report.stats)}))


def served(log: Path, spec: WebSpec, web: Path) -> dict[str, int]:
    """nginx's access log (``<address>:<port> <uri> <status>`` lines): requests by status, and the bytes of
    the files answered 200 from hosts with validators and from hosts without."""
    counts: Counter = Counter()
    hosts = {f"{spec.address(h)}:{spec.port}": h for h in range(spec.hosts)}
    for line in log.read_text().splitlines():
        netloc, uri, status = line.split(" ")
        counts[status] += 1
        if status == "200":
            host = hosts[netloc]
            path = uri.partition("?")[0].lstrip("/") or "index.html"
            group = "without" if host in without_validators(spec) else "with"
            counts[f"bytes {group} validators"] += (web / f"h{host}" / path).stat().st_size
    return {"requests": sum(v for k, v in counts.items() if k.isdigit()), **dict(sorted(counts.items()))}


def listed(output: Path) -> tuple[dict[str, int], dict[str, int], set[tuple[str, str]]]:
    """The lines of a run's output by type and by verdict, and the (url, type) of each."""
    types, verdicts, keys = Counter(), Counter(), set()
    with output.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            types[record["type"]] += 1
            verdicts[record.get("verdict", "none")] += 1
            keys.add((record["url"], record["type"]))
    return dict(types), dict(verdicts), keys


def run_child(n: int, spec: WebSpec, args, state: Path) -> tuple[Run, set[tuple[str, str]]]:
    output = args.root / f"recrawl-{spec.pages}-run{n}.jsonl"
    cmd = [sys.executable, "-m", "bench.bench_recrawl", "--child", "--pages", str(spec.pages)]
    cmd += ["--hosts", str(spec.hosts), "--services", str(spec.services), "--root", str(args.root)]
    cmd += ["--concurrency", str(args.concurrency), "--per-host", str(args.per_host)]
    cmd += ["--max-memory-mb", str(args.max_memory_mb), "--revisit-share", str(args.revisit_share)]
    cmd += ["--max-level", str(args.max_level), "--state", str(state), "--output", str(output)]
    host_directives = {h: NO_VALIDATORS for h in without_validators(spec)}
    err_path = args.root / f"recrawl-run{n}.stderr"
    with (
        synthetic_web.serving(spec, args.root, log_requests=True, host_directives=host_directives),
        err_path.open("w") as err,
    ):
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=synthetic_web.REPO)
        stdout = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"run {n} failed:\n{err_path.read_text()[-3000:]}")
    child = json.loads(stdout.decode().strip().splitlines()[-1])
    stats = Counter(child["stats"])
    types, verdicts, keys = listed(output)
    run = Run(
        run=n,
        requests=stats["fetch/requests"],
        body_bytes=stats["fetch/bytes"],
        not_modified=stats["unchanged/not_modified"],
        same_bytes=stats["unchanged/same_bytes"],
        not_due=stats["unchanged/not_due"],
        deferred=sum(v for k, v in stats.items() if k.startswith("defer/")),
        crawl_seconds=round(child["seconds"], 2),
        wall_seconds=round(wall, 2),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
        served=served(synthetic_web.access_log(args.root), spec, synthetic_web.web_dir(spec, args.root)),
        resources=types,
        verdicts=verdicts,
        keys=len(keys),
    )
    return run, keys


MEASURES = {  # name in the table -> the figure of a run
    "requests": lambda r: r.requests,
    "bytes read": lambda r: r.body_bytes,
    "wall s": lambda r: r.wall_seconds,
    "crawl s": lambda r: r.crawl_seconds,
    "CPU s": lambda r: r.cpu_seconds,
}


def markdown(runs: list[Run], spec: WebSpec, manifest: dict, args) -> tuple[str, list[str]]:
    """The table and the targets missed."""
    first, second = runs
    rows = [
        f"Web: {spec.pages:,} pages over {spec.hosts} hosts ({len(without_validators(spec))} of them without "
        f"validators), {manifest['capabilities_links']:,} links to capabilities documents; concurrency "
        f"{args.concurrency}, per host {args.per_host}; depth {args.max_level}; {os.cpu_count()} CPUs; the "
        f"second run's revisit budget {args.revisit_share:.0%} of the URLs its state holds.",
        "",
        "| measure | first run | second run | second / first | target |",
        "|---|---:|---:|---:|---:|",
    ]
    missed = []
    for name, figure in MEASURES.items():
        a, b = figure(first), figure(second)
        ratio = b / a if a else float("nan")
        target = TARGETS.get(name)
        mark = ""
        if target is not None:
            mark = f"≤ {target:.0%}" + (" **missed**" if not ratio <= target else " met")
            if not ratio <= target:
                missed.append(f"{name} {ratio:.1%} > {target:.0%}")
        rows.append(f"| {name} | {a:,} | {b:,} | {ratio:.1%} | {mark} |")
    for label, key in (
        ("answered 200 (nginx)", "200"),
        ("answered 304 (nginx)", "304"),
        ("answered 404 (nginx)", "404"),
        ("bytes of 200s, hosts with validators", "bytes with validators"),
        ("bytes of 200s, hosts without", "bytes without validators"),
    ):
        rows.append(f"| {label} | {first.served.get(key, 0):,} | {second.served.get(key, 0):,} | | |")
    rows.append(
        f"| carried over: 304 / same bytes / not due | 0 / 0 / 0 | {second.not_modified:,} / "
        f"{second.same_bytes:,} / {second.not_due:,} | | |"
    )
    rows.append(f"| deferred | {first.deferred:,} | {second.deferred:,} | | 0 |")
    rows.append(f"| resources listed | {first.keys:,} | {second.keys:,} | | all of the first |")
    rows.append(f"| peak RSS MB | {first.peak_rss_mb:.0f} | {second.peak_rss_mb:.0f} | | |")
    verdicts = ", ".join(f"{v} {n:,}" for v, n in sorted(second.verdicts.items()))
    rows += ["", f"Second run's verdicts: {verdicts}. Resources: {dict(sorted(second.resources.items()))}."]
    return "\n".join(rows), missed


def main() -> None:
    defaults = Settings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="a smoke run on 5,000 pages")
    parser.add_argument("--services", type=float, default=0.05, help="share of pages linking capabilities")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--per-host", type=int, default=defaults.per_host_concurrency)
    parser.add_argument("--max-level", type=int, default=defaults.max_level)
    parser.add_argument(
        "--max-memory-mb",
        type=int,
        default=defaults.max_memory_bytes // 2**20,
        help="the crawl's max_memory_bytes",
    )
    parser.add_argument(
        "--revisit-share",
        type=float,
        default=0.25,
        help="the second run's revisit budget, a share of the URLs the state holds (1: ask them all)",
    )
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    spec = WebSpec(pages=5000 if args.quick else args.pages, hosts=args.hosts, services=args.services)
    if args.child:
        crawl_once(spec, args)
        return
    manifest = synthetic_web.generate(spec, args.root)
    print(
        f"web: {manifest['pages']:,} pages, {manifest['links']:,} links, "
        f"{manifest['capabilities_links']:,} links to capabilities documents",
        flush=True,
    )
    state = args.root / f"recrawl-{spec.pages}.state.json.gz"
    state.unlink(missing_ok=True)
    runs, listings = [], []
    for n in (1, 2):
        print(f"run {n}...", flush=True)
        run, keys = run_child(n, spec, args, state)
        runs.append(run)
        listings.append(keys)
        print(f"  {run.requests:,} requests, {run.body_bytes:,} bytes, {run.wall_seconds:.1f} s", flush=True)
    table, missed = markdown(runs, spec, manifest, args)
    print(table)
    lost = listings[0] - listings[1]
    if lost:
        missed.append(f"{len(lost):,} resources of the first run not listed by the second")
    if any(r.deferred for r in runs):  # a run that left pages to a later one compares nothing
        missed.append(f"URLs deferred: {runs[0].deferred:,} and {runs[1].deferred:,}")
    if set(runs[1].verdicts) != {"unchanged"}:  # nothing changed, so nothing may be new, changed or gone
        missed.append(f"second run's verdicts {runs[1].verdicts}")
    out = args.root / f"results-recrawl-{spec.pages}x{spec.hosts}.json"
    out.write_text(json.dumps({"runs": [asdict(r) for r in runs], "missed": missed}, indent=1))
    print(f"figures: {out}")
    if missed:
        print("targets missed:", "; ".join(missed))
        sys.exit(1)


if __name__ == "__main__":
    main()
