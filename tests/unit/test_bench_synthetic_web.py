"""The benchmark's synthetic web: the files it writes form the connected web it claims to be."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
from collections import deque
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from lxml import html

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load_synthetic_web():
    spec = importlib.util.spec_from_file_location("synthetic_web", BENCH / "synthetic_web.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["synthetic_web"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


sw = _load_synthetic_web()
SPEC = sw.WebSpec(pages=700, hosts=3)  # several directories per host: "../" links occur


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    return root, sw.generate(SPEC, root)


def url_to_file(root: Path, url: str) -> Path | None:
    """The file nginx would serve for ``url`` on the synthetic web, or None when off the web."""
    parts = urlsplit(url)
    if parts.netloc not in SPEC.netlocs():
        return None
    host_dir = sw.web_dir(SPEC, root) / f"h{SPEC.netlocs().index(parts.netloc)}"
    return host_dir / ("index.html" if parts.path == "/" else parts.path.lstrip("/"))


def crawl_files(root: Path) -> tuple[dict[str, int], set[str]]:
    """A breadth-first walk over the written HTML: level of every URL reached, and links to missing files."""
    levels = {seed: 0 for seed in SPEC.seeds()}
    queue, missing = deque(levels), set()
    while queue:
        url = queue.popleft()
        page = html.fromstring(url_to_file(root, url).read_bytes())
        for href in page.xpath("//a/@href"):
            link = urldefrag(urljoin(url, href)).url
            target = url_to_file(root, link)
            if target is None or link in levels:
                continue
            if not target.is_file():
                missing.add(link)
            elif not urlsplit(link).path.startswith(sw.PRIVATE_DIR):
                levels[link] = levels[url] + 1
                queue.append(link)
    return levels, missing


def test_every_page_is_reached_within_max_level_from_the_seeds(web):
    root, manifest = web
    levels, missing = crawl_files(root)
    assert missing and all(u.endswith(".pdf") for u in missing)  # only the documents crawlers skip are absent
    assert set(levels) == sw.page_urls(SPEC)
    assert len(levels) == SPEC.pages == manifest["pages"]
    assert max(levels.values()) <= sw.MAX_LEVEL
    written = [p for p in sw.web_dir(SPEC, root).rglob("*.html") if sw.PRIVATE_DIR.strip("/") not in p.parts]
    assert len(written) == SPEC.pages


def test_pages_are_realistic_in_size_and_links(web):
    root, manifest = web
    pages = [url_to_file(root, u).read_bytes() for u in sw.page_urls(SPEC)]
    assert all(1800 <= len(p) <= 6000 for p in pages)
    links = [len(html.fromstring(p).xpath("//a/@href")) for p in pages]
    assert 10 <= sum(links) / len(links) <= 20
    cross_host = sum(p.count(b'href="http://') for p in pages)
    plain_text = sum(p.count(b"Mirror: http://") for p in pages)
    assert cross_host > SPEC.pages and plain_text > 0
    assert manifest["links"] > SPEC.pages * 9


def test_robots_disallows_a_private_area_that_pages_link_to(web):
    root, manifest = web
    for h in range(SPEC.hosts):
        robots = (sw.web_dir(SPEC, root) / f"h{h}" / "robots.txt").read_text()
        assert f"Disallow: {sw.PRIVATE_DIR}" in robots
    private = list(sw.web_dir(SPEC, root).rglob(f"{sw.PRIVATE_DIR.strip('/')}/*.html"))
    assert len(private) == manifest["private_links"] > 0


def test_generation_is_deterministic(tmp_path, web):
    root, _ = web

    def digest(directory: Path) -> str:
        h = hashlib.sha256()
        for p in sorted(directory.rglob("*")):
            if p.is_file() and p.name != "manifest.json":
                h.update(p.relative_to(directory).as_posix().encode() + p.read_bytes())
        return h.hexdigest()

    sw.generate(SPEC, tmp_path)
    assert digest(sw.web_dir(SPEC, tmp_path)) == digest(sw.web_dir(SPEC, root))


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"hosts": 0}, "hosts must be"), ({"hosts": 251}, "hosts must be"), ({"pages": 2, "hosts": 3}, "at least one page"),
     ({"port": 80}, "port must be"), ({"services": 1.5}, "services is a share")],
)  # fmt: skip
def test_impossible_specs_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        sw.WebSpec(**changes)


def test_the_services_heavy_variant_links_every_capabilities_document_it_serves(tmp_path, web):
    spec = sw.WebSpec(pages=700, hosts=3, services=0.1)
    manifest = sw.generate(spec, tmp_path)
    documents = sw.capabilities_documents()
    assert any(name.startswith("synthetic-") for name in documents)  # the large WMS is among them
    pages = [
        (p.relative_to(tmp_path).parts[1], p.read_text()) for p in sw.web_dir(spec, tmp_path).rglob("*.html")
    ]
    links = [(host, href) for host, page in pages for href in html.fromstring(page).xpath("//a/@href")
             if href.startswith(sw.CAPABILITIES_DIR)]  # fmt: skip
    assert len(links) == len(set(links)) == manifest["capabilities_links"]  # a URL of its own each
    assert 0.05 * spec.pages < len(links) < 0.2 * spec.pages
    for h in range(spec.hosts):
        served = sw.web_dir(spec, tmp_path) / f"h{h}" / sw.CAPABILITIES_DIR.strip("/")
        assert {p.name: p.read_bytes() for p in served.iterdir()} == documents
    root, plain = web
    assert plain["capabilities_links"] == 0
    assert not (sw.web_dir(SPEC, root) / "h0" / sw.CAPABILITIES_DIR.strip("/")).exists()


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_accepts_the_generated_config(web):
    root, _ = web
    conf = sw.nginx_conf(SPEC, root, log_requests=True)
    text = conf.read_text()
    assert all(f"listen {netloc};" in text for netloc in SPEC.netlocs())
    result = subprocess.run(["nginx", "-t", "-c", str(conf), "-p", str(root)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "access_log off;" in sw.nginx_conf(SPEC, root).read_text()


def test_the_crawl_benchmark_reads_the_totals_of_the_report_geoweb_crawl_prints():
    """bench_crawl.py parses ``geoweb crawl``'s report from its stderr: a new column must not break it."""
    from geoweb.crawl.report import CrawlReport
    from geoweb.models import LevelStats

    spec = importlib.util.spec_from_file_location("bench_crawl", BENCH / "bench_crawl.py")
    bench_crawl = importlib.util.module_from_spec(spec)
    sys.modules["bench_crawl"] = bench_crawl  # as for synthetic_web above
    spec.loader.exec_module(bench_crawl)
    report = CrawlReport(levels=[LevelStats(0, urls=8, resources=1, failures=2, seconds=1.5),
                                 LevelStats(1, urls=92, resources=3, failures=1, deferred=4, seconds=2.0)])  # fmt: skip
    report.seconds = 3.5
    assert bench_crawl.parse_geoweb("", report.table()) == (100, 3, 3.5)
