"""Five runs of a changing web: every change found in the run after it, and what each run costs.

The services-heavy synthetic web of ``bench_recrawl.py`` (half its hosts with validators, half without),
crawled five times with one state file by ``crawl_to_jsonl`` (what ``geoweb crawl --state PATH`` runs), each
run a subprocess of its own, with nginx restarted so its access log holds that run. Every run asks every
URL it knows (a revisit budget of all of them), so every change can be found. Before each of runs 2 to 5,
with a fixed seed, 5 % of the pages get new bytes (a paragraph rewritten; a third of them also a link to an
existing page) and the capabilities documents behind 2 % of the resources the crawl holds change (a new
service title, or on a WMS a new layer). A document is a file per host, linked by several pages as URLs of
their own (``?copy=<page>``): changing it changes every resource served from it, which are the resources
planted. Every changed file gets a later mtime, so nginx sends a new ETag and Last-Modified.

After each run: every planted resource must be listed ``changed`` and no other; every changed page must
have been answered 200. Prints a table per run, writes ``var/bench/results-changing-<pages>.json`` and the
plot ``var/bench/changing-web-costs.png`` (requests, bytes and CPU per run, relative to run 1), and exits 1
when a change is missed or a resource is reported changed wrongly.

    .venv/bin/python -m bench.bench_changing_web              # 20,000 pages over 8 hosts
    .venv/bin/python -m bench.bench_changing_web --quick      # 2,000 pages: a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

from bench import synthetic_web
from bench.bench_recrawl import Run, run_child, without_validators
from bench.synthetic_web import CAPABILITIES_DIR, DEFAULT_ROOT, WORDS, WebSpec, page_file, page_path
from geoweb.settings import Settings

RUNS = 5
PAGE_SHARE = 0.05
RESOURCE_SHARE = 0.02
LINK_SHARE = 1 / 3  # of the changed pages, those that also get a link to an existing page
# In the web's folder once it was changed: the next invocation generates it again, so run 1 is the same web.
CHANGED_MARK = "changed-by-bench.json"
_PARAGRAPH = re.compile(rb"(<main>.*?<p>)(.*?)(</p>)", re.S)
_LAST_LINK = b"</ul>"


@dataclass
class Changes:
    """What was changed on disk before a run."""

    pages: list[tuple[int, int]] = field(default_factory=list)  # (host, index)
    linked: int = 0  # of them, those given a new link
    documents: list[tuple[int, str, str]] = field(default_factory=list)  # (host, file, how)
    resources: set[tuple[str, str]] = field(default_factory=set)  # (url, type) served from those documents


@dataclass
class Checked:
    """One run against the changes planted before it."""

    run: Run
    pages_changed: int
    pages_linked: int
    pages_answered_200: int  # of the changed pages
    documents: list[tuple[int, str, str]]  # (host, file, how)
    resources_planted: int
    resources_found: int  # planted and listed changed
    missed: list[str]  # planted, not listed changed
    wrongly_changed: list[str]  # listed changed, not planted
    verdicts: dict[str, int]


def fresh_web(spec: WebSpec, root: Path) -> dict:
    """The generated web, generated again if an earlier invocation changed it."""
    web = synthetic_web.web_dir(spec, root)
    if (web / CHANGED_MARK).exists():
        shutil.rmtree(web)
    return synthetic_web.generate(spec, root)


def touch_later(path: Path) -> None:
    """A later mtime, whole seconds apart: nginx's ETag and Last-Modified are in seconds."""
    moment = max(time.time(), path.stat().st_mtime + 1)
    os.utime(path, (moment, moment))


def change_pages(spec: WebSpec, web: Path, rng: random.Random, run: int, changes: Changes) -> None:
    """``PAGE_SHARE`` of the pages: the first paragraph rewritten, and for ``LINK_SHARE`` of them a link to an
    existing page of the same host added."""
    pages = [(h, i) for h in range(spec.hosts) for i in range(spec.pages_of(h))]
    for host, index in sorted(rng.sample(pages, round(PAGE_SHARE * len(pages)))):
        path = page_file(web / f"h{host}", index)
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(25, 60)))
        body, replaced = _PARAGRAPH.subn(
            rb"\g<1>" + f"Revised {run}: {words}.".encode() + rb"\g<3>", path.read_bytes(), 1
        )
        if not replaced:
            raise RuntimeError(f"no paragraph to change in {path}")
        if rng.random() < LINK_SHARE:
            target = page_path(rng.randrange(spec.pages_of(host)))
            link = f'<li><a href="{target}">New in run {run}</a></li>\n'.encode()
            at = body.rindex(_LAST_LINK)
            body = body[:at] + link + body[at:]
            changes.linked += 1
        path.write_bytes(body)
        touch_later(path)
        changes.pages.append((host, index))


def document_of(spec: WebSpec, url: str) -> tuple[int, str] | None:
    """(host, file) of a capabilities document's URL, None for another URL."""
    parts = urlsplit(url)
    if not parts.path.startswith(CAPABILITIES_DIR) or "copy" not in parse_qs(parts.query):
        return None
    host = int(parts.hostname.rsplit(".", 1)[1]) - 1
    return (host, parts.path[len(CAPABILITIES_DIR) :]) if spec.address(host) == parts.hostname else None


def new_title(body: bytes, title: str, run: int) -> bytes | None:
    """``body`` with every element holding ``title`` as its text given another; None when none does."""
    for encoding in ("utf-8", "iso-8859-1"):
        try:
            held = escape(title).encode(encoding)
        except UnicodeEncodeError:
            continue
        pattern = re.compile(rb"(<(?:[\w-]+:)?(?:Title|label)>)\s*" + re.escape(held) + rb"\s*(</)")
        changed, count = pattern.subn(rb"\g<1>" + held + f" (revised {run})".encode() + rb"\g<2>", body)
        if count:
            return changed
    return None


def new_layer(body: bytes, run: int) -> bytes | None:
    """A WMS's ``body`` with a layer added to its top layer; None for another document."""
    if b"WMT_MS_Capabilities" not in body[:4000] and b"WMS_Capabilities" not in body[:4000]:
        return None
    at = body.rfind(b"</Layer>")
    if at < 0:
        return None
    layer = f"<Layer><Name>added_{run}</Name><Title>Added in run {run}</Title></Layer>\n".encode()
    return body[:at] + layer + body[at:]


def change_documents(
    spec: WebSpec,
    web: Path,
    rng: random.Random,
    run: int,
    held: dict[tuple[str, str], dict],
    changes: Changes,
) -> None:
    """Documents until the resources served from them reach ``RESOURCE_SHARE`` of those the crawl holds:
    each a new layer (every other WMS) or a new title, so that the resource's record changes."""
    served: dict[tuple[int, str], list[tuple[str, str]]] = {}
    for key in sorted(held):
        document = document_of(spec, key[0])
        if document is not None:
            served.setdefault(document, []).append(key)
    wanted = max(1, round(RESOURCE_SHARE * len(held)))
    order = sorted(served)
    rng.shuffle(order)
    for host, name in order:
        if len(changes.resources) >= wanted:
            break
        path = web / f"h{host}" / CAPABILITIES_DIR.strip("/") / name
        body = path.read_bytes()
        keys = served[(host, name)]
        title = held[keys[0]].get("title")
        changed, how = None, ""
        if rng.random() < 0.5:
            changed, how = new_layer(body, run), "layer"
        if changed is None and title:
            changed, how = new_title(body, title, run), "title"
        if changed is None:  # neither a WMS nor a title found in the text: its record could not change
            continue
        path.write_bytes(changed)
        touch_later(path)
        changes.documents.append((host, name, how))
        changes.resources.update(keys)


def listing(output: Path) -> tuple[dict[tuple[str, str], dict], Counter]:
    """A run's lines by (url, type), without their datasets, and the count of each verdict."""
    records, verdicts = {}, Counter()
    with output.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            record.pop("dataset_list", None)
            records[(record["url"], record["type"])] = record
            verdicts[record["verdict"]] += 1
    return records, verdicts


def answered_200(log: Path) -> set[tuple[str, str]]:
    """(netloc, path) of every request nginx answered 200 in the run."""
    ok = set()
    for line in log.read_text().splitlines():
        netloc, uri, status = line.split(" ")
        if status == "200":
            ok.add((netloc, uri.partition("?")[0]))
    return ok


def check(run: Run, changes: Changes, records: dict, verdicts: Counter, spec: WebSpec, args) -> Checked:
    ok = answered_200(synthetic_web.access_log(args.root))
    fetched = sum((f"{spec.address(h)}:{spec.port}", page_path(i)) in ok for h, i in changes.pages)
    reported = {key for key, record in records.items() if record["verdict"] == "changed"}
    return Checked(
        run=run,
        pages_changed=len(changes.pages),
        pages_linked=changes.linked,
        pages_answered_200=fetched,
        documents=changes.documents,
        resources_planted=len(changes.resources),
        resources_found=len(changes.resources & reported),
        missed=sorted(" ".join(key) for key in changes.resources - reported),
        wrongly_changed=sorted(" ".join(key) for key in reported - changes.resources),
        verdicts=dict(sorted(verdicts.items())),
    )


def markdown(checked: list[Checked], spec: WebSpec, manifest: dict, args) -> str:
    first = checked[0].run
    rows = [
        f"Web: {spec.pages:,} pages over {spec.hosts} hosts ({len(without_validators(spec))} of them without "
        f"validators), {manifest['capabilities_links']:,} links to capabilities documents; concurrency "
        f"{args.concurrency}, per host {args.per_host}; depth {args.max_level}; {os.cpu_count()} CPUs; every "
        "known URL asked in every run.",
        "",
        "| run | requests | bytes read | wall s | CPU s | requests / bytes / CPU of run 1 | 200 / 304 | "
        "pages changed: answered 200 / planted | resources changed: found / planted | listed changed | verdicts |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in checked:
        r = c.run
        rows.append(
            f"| {r.run} | {r.requests:,} | {r.body_bytes:,} | {r.wall_seconds:.1f} | {r.cpu_seconds:.1f} | "
            f"{r.requests / first.requests:.0%} / {r.body_bytes / first.body_bytes:.0%} / "
            f"{r.cpu_seconds / first.cpu_seconds:.0%} | "
            f"{r.served.get('200', 0):,} / {r.served.get('304', 0):,} | {c.pages_answered_200:,} / "
            f"{c.pages_changed:,} | {c.resources_found:,} / {c.resources_planted:,} | "
            f"{c.verdicts.get('changed', 0):,} | "
            + ", ".join(f"{v} {n:,}" for v, n in c.verdicts.items())
            + " |"
        )
    return "\n".join(rows)


def plot(checked: list[Checked], spec: WebSpec, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    first = checked[0].run
    runs = [c.run.run for c in checked]
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, figure in (
        ("requests", lambda r: r.requests),
        ("bytes read", lambda r: r.body_bytes),
        ("CPU s", lambda r: r.cpu_seconds),
    ):
        ax.plot(runs, [100 * figure(c.run) / figure(first) for c in checked], marker="o", label=label)
    ax.set_xticks(runs)
    ax.set_xlabel("run (runs 2-5: after 5 % of pages and 2 % of resources changed)")
    ax.set_ylabel("% of run 1")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(f"Five runs of a changing web: cost per run ({spec.pages:,} pages)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    defaults = Settings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="a smoke run on 2,000 pages")
    parser.add_argument("--services", type=float, default=0.05, help="share of pages linking capabilities")
    parser.add_argument("--seed", type=int, default=29, help="chooses what changes")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--per-host", type=int, default=defaults.per_host_concurrency)
    parser.add_argument("--max-level", type=int, default=defaults.max_level)
    parser.add_argument("--max-memory-mb", type=int, default=4096, help="the crawl's max_memory_bytes")
    # its own folder: the web is changed on disk, and the other benches reuse theirs
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT / "changing")
    args = parser.parse_args()
    args.revisit_share = 1.0  # every known URL asked: no change may be left unasked
    spec = WebSpec(pages=2000 if args.quick else args.pages, hosts=args.hosts, services=args.services)
    manifest = fresh_web(spec, args.root)
    web = synthetic_web.web_dir(spec, args.root)
    print(
        f"web: {manifest['pages']:,} pages, {manifest['capabilities_links']:,} links to capabilities documents",
        flush=True,
    )
    state = args.root / f"changing-{spec.pages}.state.json.gz"
    state.unlink(missing_ok=True)
    rng = random.Random(args.seed)
    checked: list[Checked] = []
    held: dict[tuple[str, str], dict] = {}
    for n in range(1, RUNS + 1):
        changes = Changes()
        if n > 1:
            (web / CHANGED_MARK).write_text(json.dumps({"seed": args.seed}))
            change_pages(spec, web, rng, n, changes)
            change_documents(spec, web, rng, n, held, changes)
        print(
            f"run {n}: {len(changes.pages):,} pages and {len(changes.documents)} documents "
            f"({len(changes.resources)} resources) changed before it...",
            flush=True,
        )
        run, _ = run_child(n, spec, args, state)
        records, verdicts = listing(args.root / f"recrawl-{spec.pages}-run{n}.jsonl")
        checked.append(check(run, changes, records, verdicts, spec, args))
        held = {key: record for key, record in records.items() if record["verdict"] != "gone"}
        c = checked[-1]
        print(
            f"  {run.requests:,} requests, {run.body_bytes:,} bytes, {run.wall_seconds:.1f} s; changed found "
            f"{c.resources_found}/{c.resources_planted}, listed changed {verdicts['changed']}",
            flush=True,
        )
    print(markdown(checked, spec, manifest, args))
    failures = []
    for c in checked:
        if c.missed:
            failures.append(f"run {c.run.run}: {len(c.missed)} changed resources not reported changed")
        if c.wrongly_changed:
            failures.append(f"run {c.run.run}: {len(c.wrongly_changed)} resources reported changed wrongly")
        if c.pages_answered_200 < c.pages_changed:
            failures.append(
                f"run {c.run.run}: {c.pages_changed - c.pages_answered_200} changed pages not read"
            )
        if c.run.deferred:
            failures.append(f"run {c.run.run}: {c.run.deferred} URLs deferred")
    out_dir = DEFAULT_ROOT
    out = out_dir / f"results-changing-{spec.pages}.json"
    out.write_text(json.dumps({"runs": [asdict(c) for c in checked], "failures": failures}, indent=1))
    plot(checked, spec, out_dir / "changing-web-costs.png")
    print(f"figures: {out}; plot: {out_dir / 'changing-web-costs.png'}")
    if failures:
        print("failed:", "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
