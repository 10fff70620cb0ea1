"""The cost curve as a crawl grows to the paper's size: one ``geoweb_crawl`` run on the stack (its two Celery
workers) and ``geoweb crawl`` in one process, over the same web generated on the fly (``bench/big_web.py``).

Every ``--sample`` seconds a sampler reads the pages the web has served so far (its own ``/__stats``) and the
resident memory of each crawling process tree (the CLI; each Celery worker with its children), and for the
DAG the size of the frontier table and of the harvest database. After each crawl: per level the URLs, the
slowest shard's seconds and the time its commits took; for the DAG the planning task's time, the wall time of
the level from its first mapped task queued to its last one done, and Airflow's overhead per mapped task
(task instance duration minus the crawl time the shard recorded). The frontier's bytes per URL are its growth
over the run divided by the run's rows. Results go to ``var/bench/results-scale.json``, a markdown table to
stdout, and the plot of throughput and memory against pages crawled to ``--plot``.

With ``--runs 2`` the DAG crawls the web again as the next run of the same crawl, asking again at most
``--revisit-share`` of the pages it knows (``revisit_budget``), conditionally where the web's even hosts sent
validators; the table then gives each run's requests, bytes, wall time and CPU as a share of the first's.

    python -m bench.bench_scale --pages 2000000 --hosts 1000             # the paper's size: about an hour
    python -m bench.bench_scale --pages 200000 --hosts 200 --crawlers dag --runs 2   # a second run's cost
    python -m bench.bench_scale --pages 100000 --hosts 100 --crawlers cli  # a quick look, one process
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import psycopg2

from bench.big_web import STATS_PATH, BigWebSpec
from geoweb.store import Store
from stack import airflow, catalogue, postgres, redis, supervisor, workers
from stack.airflow import MAIN_DAG
from stack.airflow_api import AirflowClient
from stack.layout import GEOWEB_DB, PG_DATA, REPO

OUT = REPO / "var" / "bench" / "results-scale.json"
CRAWLERS = ("dag", "cli")
CLI_MEMORY = 2 * 1024**3  # max_memory_bytes of `geoweb crawl` (see crawl_cli)
RUN_TIMEOUT = 4 * 3600.0
_LEVEL_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+([\d.]+)\s*$", re.M)


@dataclass
class Sample:
    seconds: float
    pages: int  # distinct pages the web has served
    pss_mb: dict[str, float]  # per crawling process tree, shared pages counted proportionally
    largest_mb: float  # resident memory of the largest single process among them
    frontier_mb: float | None = None
    database_mb: float | None = None


@dataclass
class Level:
    level: int
    urls: int
    shards: int
    slowest_shard_seconds: float
    commit_seconds: float | None = None  # summed over the level's shards
    plan_seconds: float | None = None
    wall_seconds: float | None = None  # first mapped task queued to the last one done
    overhead_per_task: float | None = None


@dataclass
class Result:
    crawler: str
    wall_seconds: float
    pages: int
    requests: int
    levels: list[Level]
    body_bytes: int = 0  # of the web's answers
    not_modified: int = 0  # 304s the web answered
    samples: list[Sample] = field(default_factory=list)
    peak_mb: dict[str, float] = field(default_factory=dict)  # PSS of each process tree, sampled
    largest_process_mb: float = 0.0
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per part of the deployment
    frontier_bytes_per_url: float | None = None
    database_bytes_per_url: float | None = None
    run_id: str | None = None
    resources: int | None = None  # the run confirmed (the DAG's)
    run: int | None = None  # its number among the crawl's runs, with --runs above 1

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.wall_seconds

    @property
    def crawl_cpu_seconds(self) -> float:
        """CPU of the deployment's parts, the web's excluded."""
        return sum(seconds for name, seconds in self.cpu_seconds.items() if name != "web")


def web_stats(spec: BigWebSpec) -> dict:
    with urllib.request.urlopen(spec.origin(0) + STATS_PATH, timeout=10) as answer:
        return json.load(answer)


@contextmanager
def big_web(spec: BigWebSpec) -> Iterator[subprocess.Popen]:
    """The web in a child process, restarted for each crawl so its account holds that crawl only."""
    command = [sys.executable, "-m", "bench.big_web", "--pages", str(spec.pages), "--hosts", str(spec.hosts),
               "--port", str(spec.port), "--slow-hosts", str(spec.slow_hosts),
               "--slow-seconds", str(spec.slow_seconds)]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=REPO, start_new_session=True
    )  # a group of its own: its CPU is read
    try:
        supervisor.wait_while(lambda: not _answers(spec) and server.poll() is None, timeout=60)
        if server.poll() is not None:
            raise RuntimeError(f"the big web exited with code {server.returncode}")
        yield server
    finally:
        server.terminate()
        server.wait(timeout=10)


def _answers(spec: BigWebSpec) -> bool:
    try:
        web_stats(spec)
    except OSError:
        return False
    return True


def memory_mb(pids: set[int]) -> tuple[float, float]:
    """(total PSS, largest RSS) of these processes in MB. A Celery worker's children are forks sharing most
    of their pages, so the tree's total is counted proportionally (PSS), each shared page once."""
    pss, rss = 0.0, [0.0]
    for pid in pids:
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        fields = dict(line.split(":", 1) for line in rollup.splitlines()[1:] if ":" in line)
        pss += int(fields["Pss"].split()[0]) / 1e3  # kB
        rss.append(int(fields["Rss"].split()[0]) / 1e3)
    return pss, max(rss)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids: set[int]) -> float:
    """CPU time of these processes and of their children they have reaped (so each exited task is counted
    once, in its parent)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return total / CLOCK_TICKS


def postgres_pid() -> int | None:
    try:
        return int((PG_DATA / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def relation_mb() -> tuple[float, float]:
    """(frontier table with its indexes, harvest database) in MB."""
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_total_relation_size('frontier'), pg_database_size(current_database())")
        frontier, database = cur.fetchone()
    return frontier / 1e6, database / 1e6


class Sampler(threading.Thread):
    """Samples the web's progress and the memory of ``groups()`` (name -> process group) until stopped."""

    def __init__(self, spec: BigWebSpec, groups, interval: float, database: bool, cpu_groups=dict):
        super().__init__(daemon=True)
        self.spec, self.groups, self.interval, self.database = spec, groups, interval, database
        self.cpu_groups = cpu_groups  # name -> process group whose CPU time the run is charged
        self.cpu_at_start = self.cpu()
        self.samples: list[Sample] = []
        self.peak: dict[str, float] = {}
        self.largest = 0.0
        self.stopped = threading.Event()
        self.started_at = time.monotonic()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        per_tree, largest = {}, 0.0
        for name, group in self.groups().items():
            total, big = memory_mb(supervisor.family(group))
            per_tree[name] = round(total, 1)
            largest = max(largest, big)
            self.largest = max(self.largest, big)
            self.peak[name] = max(self.peak.get(name, 0.0), per_tree[name])
        sample = Sample(round(time.monotonic() - self.started_at, 1), web_stats(self.spec)["pages"], per_tree,
                        round(largest, 1))  # fmt: skip
        if self.database and len(self.samples) % 5 == 0:
            sample.frontier_mb, sample.database_mb = (round(v, 1) for v in relation_mb())
        self.samples.append(sample)

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(supervisor.family(group)) for name, group in self.cpu_groups().items()}

    def cpu_used(self) -> dict[str, float]:
        """CPU seconds of each group since the sampler was made."""
        now = self.cpu()
        return {name: round(now[name] - self.cpu_at_start.get(name, 0.0), 1) for name in now}

    def stop(self, last_sample: bool = True) -> list[Sample]:
        """The samples, with a last one unless the processes have exited (it would read no memory)."""
        self.stopped.set()
        self.join()
        if last_sample:
            self.sample()
        return self.samples


def crawl_cli(spec: BigWebSpec, args) -> list[Result]:
    """``geoweb crawl`` over the web in one process; its peak memory from wait4."""
    seeds = Path(tempfile.mkstemp(prefix="scale-seeds-", suffix=".txt", dir=OUT.parent)[1])
    seeds.write_text("\n".join(spec.seeds()) + "\n")
    command = [str(Path(sys.executable).parent / "geoweb"), "--log-level", "WARNING", "crawl", "--seeds-file",
               str(seeds), "--max-level", "5", "--output", os.devnull]  # fmt: skip
    for host in spec.allowed_hosts():
        command += ["--allow-host", host]
    # one process holds a level's links in memory (890 MB at the end of 2,000,000 pages): under the default
    # bound of 400 MB it would refuse every page past it, so the reference crawl gets room for them
    env = dict(
        os.environ,
        GEOWEB_MAX_PAGES_PER_HOST=str(2 * spec.pages_of(0)),
        GEOWEB_MAX_MEMORY_BYTES=str(CLI_MEMORY),
    )
    stderr_path = OUT.parent / "scale-cli.stderr"
    with big_web(spec), stderr_path.open("w") as stderr:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
                                   start_new_session=True)  # fmt: skip
        sampler = Sampler(spec, lambda: {"geoweb crawl": process.pid}, args.sample, database=False)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        samples = sampler.stop(last_sample=False)
        served = web_stats(spec)
    seeds.unlink()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"geoweb crawl failed:\n{stderr_path.read_text()[-3000:]}")
    levels = [
        Level(int(m[1]), int(m[2]), 1, float(m[6])) for m in _LEVEL_ROW.finditer(stderr_path.read_text())
    ]
    return [Result("geoweb crawl (1 process)", round(wall, 1), served["pages"], served["requests"], levels,
                   served["body_bytes"], served["not_modified"], samples, sampler.peak,
                   largest_process_mb=round(usage.ru_maxrss / 1024, 1),
                   cpu_seconds={"geoweb crawl": round(usage.ru_utime + usage.ru_stime, 1)})]  # fmt: skip


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _duration(task: dict) -> float:
    return (_time(task["end_date"]) - _time(task["start_date"])).total_seconds()


def start_stack() -> None:
    """Start the stack's components that are down (left running after, as ``python -m stack start`` does),
    and bring the harvest database's schema up to date, so that a fresh stack is measured as a used one."""
    for component in (postgres, redis, catalogue, airflow, workers):
        if not component.running():
            component.start()
            print(component.status(), flush=True)
    with Store(GEOWEB_DB) as store:
        store.migrate()


def crawl_dag(spec: BigWebSpec, args) -> list[Result]:
    """``--runs`` geoweb_crawl runs of one new crawl, each triggered over the REST API as the UI does, on the
    stack (started if down)."""
    start_stack()
    conf = {"seeds": spec.seeds(), "allowed_hosts": spec.allowed_hosts(), "max_level": 5,
            "max_pages_per_host": 2 * spec.pages_of(0), "crawl": f"bench-scale-{datetime.now():%Y%m%dT%H%M%S}",
            "revisit_budget": round(args.revisit_share * spec.pages)} | (
                {"shards": args.shards} if args.shards else {})  # fmt: skip
    return [crawl_dag_run(spec, args, conf, run) for run in range(1, args.runs + 1)]


def crawl_dag_run(spec: BigWebSpec, args, conf: dict, run: int) -> Result:
    """One run of the crawl ``conf`` names."""
    client = AirflowClient.from_environment()
    client.unpause(MAIN_DAG)
    frontier_before, database_before = relation_mb()

    def groups() -> dict[str, int]:
        return {s.name: pid for s in workers.SERVICES if (pid := supervisor.running_pid(s)) is not None}

    def parts() -> dict[str, int]:
        services = {"airflow": [*airflow.SERVICES], "catalogue": [catalogue.SERVICE]}
        found = {f"{name}:{s.name}": pid for name, group in services.items() for s in group
                 if (pid := supervisor.running_pid(s)) is not None}  # fmt: skip
        if (pid := postgres_pid()) is not None:
            found["postgres"] = pid
        return groups() | found

    with big_web(spec) as web:
        sampler = Sampler(
            spec, groups, args.sample, database=True, cpu_groups=lambda: parts() | {"web": web.pid}
        )
        started = time.monotonic()
        sampler.start()
        run_id = client.trigger(MAIN_DAG, conf)
        state = client.wait(MAIN_DAG, run_id, RUN_TIMEOUT, poll=1.0)
        wall = time.monotonic() - started
        samples = sampler.stop()
        cpu = sampler.cpu_used()
        served = web_stats(spec)
    if state != "success":
        raise RuntimeError(f"run {run_id} ended {state}")
    frontier_after, database_after = relation_mb()
    with psycopg2.connect(GEOWEB_DB) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM frontier_urls WHERE run_id = %s", (run_id,))
        rows = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM run_resources WHERE run_id = %s", (run_id,))
        resources = cur.fetchone()[0]
        # a level's URLs from its committed rows, as the run's report counts them: a task running ahead and
        # the level's own task may both report a level of one shard in crawl_levels, the later replacing
        cur.execute("SELECT l.level, f.urls, count(*), max(l.seconds) FROM crawl_levels l "
                    "JOIN level_figures(%s) f USING (level) WHERE l.run_id = %s GROUP BY l.level, f.urls "
                    "ORDER BY l.level", (run_id, run_id))  # fmt: skip
        levels = {
            level: Level(level, urls, shards, round(slowest, 1)) for level, urls, shards, slowest in cur
        }
        cur.execute("SELECT level, shard, seconds FROM crawl_levels WHERE run_id = %s", (run_id,))
        crawl_seconds = {(level, shard): seconds for level, shard, seconds in cur}
    tasks = [t for t in client.task_instances(MAIN_DAG, run_id) if t["state"] == "success"]
    for level in levels.values():
        plan = [t for t in tasks if t["task_id"] == f"plan_level_{level.level}"]
        mapped = [t for t in tasks if t["task_id"] == f"crawl_level_{level.level}"]
        if plan:
            level.plan_seconds = round(_duration(plan[0]), 2)
        if not mapped:
            continue
        summaries = [client.xcom(MAIN_DAG, run_id, t["task_id"], t["map_index"]) for t in mapped]
        level.commit_seconds = round(sum(s.get("commit_seconds", 0.0) for s in summaries), 1)
        first = min(_time(t["queued_when"]) for t in mapped)
        level.wall_seconds = round((max(_time(t["end_date"]) for t in mapped) - first).total_seconds(), 1)
        overheads = [
            _duration(t) - crawl_seconds.get((level.level, s["shard"]), 0.0)
            for t, s in zip(mapped, summaries, strict=True)
        ]
        level.overhead_per_task = round(statistics.mean(overheads), 2)
    numbered = run if args.runs > 1 else None
    name = "geoweb_crawl DAG (2 workers)" + (f", run {run}" if numbered else "")
    return Result(
        name, round(wall, 1), served["pages"], served["requests"], list(levels.values()),
        served["body_bytes"], served["not_modified"], samples, sampler.peak, round(sampler.largest, 1), cpu,
        run_id=run_id, resources=resources, run=numbered,
        frontier_bytes_per_url=round((frontier_after - frontier_before) * 1e6 / rows, 1) if rows else None,
        database_bytes_per_url=round((database_after - database_before) * 1e6 / rows, 1) if rows else None,
    )  # fmt: skip


def markdown(results: list[Result]) -> str:
    lines = [
        "| crawler | pages | requests | wall s | pages/s | peak memory MB (PSS per process tree) | largest "
        "process MB | frontier B/URL | database B/URL |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for r in results:
        peaks = ", ".join(f"{name} {mb:,.0f}" for name, mb in r.peak_mb.items())
        lines.append(
            f"| {r.crawler} | {r.pages:,} | {r.requests:,} | {r.wall_seconds:,.1f} | {r.pages_per_second:,.0f} "
            f"| {peaks} | {r.largest_process_mb:,.0f} | {r.frontier_bytes_per_url or 'n/a'} | {r.database_bytes_per_url or 'n/a'} |"
        )
    runs = [r for r in results if r.run is not None]
    if runs:
        first = runs[0]
        lines += ["", "| run | requests | 304s | bytes read | wall s | CPU s | resources | requests / first "
                  "| bytes / first | wall / first | CPU / first |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for r in runs:
            ratios = (r.requests / first.requests, r.body_bytes / first.body_bytes,
                      r.wall_seconds / first.wall_seconds, r.crawl_cpu_seconds / first.crawl_cpu_seconds)  # fmt: skip
            lines.append(
                f"| {r.run} | {r.requests:,} | {r.not_modified:,} | {r.body_bytes:,} | "
                f"{r.wall_seconds:,.1f} | {r.crawl_cpu_seconds:,.0f} | {r.resources} | "
                + " | ".join(f"{ratio:.1%}" for ratio in ratios)
                + " |"
            )
    for r in results:
        cpu = ", ".join(
            f"{name} {seconds:,.0f}" for name, seconds in sorted(r.cpu_seconds.items(), key=lambda i: -i[1])
        )
        lines += ["", f"{r.crawler}, CPU seconds: {cpu}"]
    for r in results:
        lines += ["", f"{r.crawler}, per level:", "",
                  "| level | URLs | shards | slowest shard s | commits s | plan s | level wall s | overhead per task s |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for lv in r.levels:
            cells = (lv.commit_seconds, lv.plan_seconds, lv.wall_seconds, lv.overhead_per_task)
            lines.append(
                f"| {lv.level} | {lv.urls:,} | {lv.shards} | {lv.slowest_shard_seconds} | "
                + " | ".join("n/a" if c is None else str(c) for c in cells)
                + " |"
            )
    return "\n".join(lines)


def plot(results: list[Result], path: Path) -> None:
    """Throughput (pages/s between samples) and memory against pages crawled, one line per crawler."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (speed, memory) = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        points = [s for s in r.samples if s.pages]
        rates = [
            ((b.pages + a.pages) / 2, (b.pages - a.pages) / (b.seconds - a.seconds))
            for a, b in pairwise(points)
            if b.seconds > a.seconds
        ]
        speed.plot([p for p, _ in rates], [v for _, v in rates], label=r.crawler)
        for name in r.peak_mb:
            memory.plot([s.pages for s in points], [s.pss_mb.get(name, 0) for s in points],
                        label=f"{r.crawler}: {name}")  # fmt: skip
    speed.set(xlabel="pages crawled", ylabel="pages/s", title="Throughput as the crawl grows")
    memory.set(xlabel="pages crawled", ylabel="memory (PSS), MB", title="Memory as the crawl grows")
    for axes in (speed, memory):
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    defaults = BigWebSpec()
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_scale", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--pages", type=int, default=defaults.pages)
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--slow-hosts", type=int, default=defaults.slow_hosts, help="hosts answering slowly")
    parser.add_argument("--slow-seconds", type=float, default=defaults.slow_seconds)
    parser.add_argument("--shards", type=int, help="the DAG's shards per level (default: the DAG's own)")
    parser.add_argument("--crawlers", default=",".join(CRAWLERS), help="comma list of dag, cli")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--plot", type=Path, default=OUT.parent / "scale.png")
    parser.add_argument(
        "--runs", type=int, default=1, help="runs of the DAG's crawl, each after the one before"
    )
    parser.add_argument(
        "--revisit-share", type=float, default=0.25, help="share of the known pages a later run asks again"
    )
    args = parser.parse_args(argv)
    spec = BigWebSpec(
        pages=args.pages, hosts=args.hosts, slow_hosts=args.slow_hosts, slow_seconds=args.slow_seconds
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    runs = {"dag": crawl_dag, "cli": crawl_cli}
    results = []
    for name in args.crawlers.split(","):
        for result in runs[name](spec, args):
            results.append(result)
            print(f"{result.crawler}: {result.pages:,} pages in {result.wall_seconds:,.0f} s", flush=True)
    print(markdown(results))
    plot(results, args.plot)
    OUT.write_text(json.dumps({"spec": asdict(spec), "results": [asdict(r) for r in results]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
