"""A synthetic web for crawl benchmarks: static HTML pages over several loopback hosts, served by nginx.

Host ``i`` is ``http://127.0.0.(i+1):PORT``: distinct addresses give every host its own per-host slot in any
crawler (Linux routes all of 127/8 to ``lo``). Pages link to one another relatively, absolutely and across
hosts; a spanning tree guarantees that a breadth-first crawl from each host's root reaches every page within
``MAX_LEVEL`` link hops, and ``generate`` proves it by a BFS over the graph it wrote. Each host's robots.txt
disallows ``/private/``, which some pages link to. Generation is deterministic for a given ``WebSpec``.

The services-heavy variant (``services``, a share of pages) links capabilities documents from that share of
pages: every real document the project tests with (tests/data/corpus, tests/data/capabilities,
tests/conformance/documents) and a large synthetic WMS (the layers of the largest corpus WMS repeated), each
link a URL of its own (``/capabilities/<file>?copy=<n>``), so every one is fetched and validated.

    python bench/synthetic_web.py --pages 20000 --hosts 8 --serve   # generate, serve until Ctrl-C
    python bench/synthetic_web.py --services 0.05 --serve            # the services-heavy variant
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = REPO / "var" / "bench"
MAX_LEVEL = 5
PAGES_PER_DIR = 100
PRIVATE_DIR = "/private/"
CAPABILITIES_DIR = "/capabilities/"
# the real capabilities documents the services-heavy variant serves, wherever they are present
CAPABILITIES_SOURCES = (
    REPO / "tests" / "data" / "corpus" / "capabilities",
    REPO / "tests" / "data" / "capabilities",
    REPO / "tests" / "conformance" / "documents",
)
SYNTHETIC_COPIES = 400  # the large synthetic WMS: 400 copies of the largest corpus WMS's layers
# A generated web is reused while both its spec and this generator are unchanged.
MANIFEST = "manifest.json"  # in each web's folder: its spec, its generator and what it holds
GENERATOR_DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]

WORDS = (
    "map service layer feature coverage tile catalogue record dataset survey elevation river basin land use "
    "cover soil geology boundary parcel road network transport census population climate rainfall station "
    "sensor observation forecast hazard flood risk zone habitat species protected area coastline bathymetry "
    "orthophoto imagery satellite mosaic grid projection datum metadata standard download archive portal "
    "municipal regional national agency open data licence update annual quarterly monitoring programme water "
    "quality air noise energy infrastructure planning cadastre building address postcode administrative unit"
).split()
_ANCHORS = ("Read more", "Details", "Dataset page", "See also", "Next", "Archive", "Related", "Overview")


@dataclass(frozen=True, slots=True)
class WebSpec:
    pages: int = 20_000
    hosts: int = 8
    port: int = 18200
    seed: int = 20160808
    services: float = 0.0  # share of pages linking a capabilities document (the services-heavy variant)

    def __post_init__(self):
        if not 1 <= self.hosts <= 250:
            raise ValueError(f"hosts must be 1..250 (one loopback address each), got {self.hosts}")
        if self.pages < self.hosts:
            raise ValueError(f"need at least one page per host: pages={self.pages} < hosts={self.hosts}")
        if not 1024 <= self.port <= 65535:
            raise ValueError(f"port must be 1024..65535, got {self.port}")
        if not 0 <= self.services <= 1:
            raise ValueError(f"services is a share of pages, 0..1, got {self.services}")

    def address(self, host: int) -> str:
        return f"127.0.0.{host + 1}"

    def origin(self, host: int) -> str:
        return f"http://{self.address(host)}:{self.port}"

    def netlocs(self) -> list[str]:
        return [f"{self.address(h)}:{self.port}" for h in range(self.hosts)]

    def seeds(self) -> list[str]:
        return [self.origin(h) + "/" for h in range(self.hosts)]

    def pages_of(self, host: int) -> int:
        """Pages are spread evenly; the first hosts take the remainder."""
        return self.pages // self.hosts + (host < self.pages % self.hosts)


def page_path(index: int) -> str:
    """URL path of a host's page ``index``; 0 is the root."""
    return "/" if index == 0 else f"/s{index // PAGES_PER_DIR:03d}/p{index:05d}.html"


def web_dir(spec: WebSpec, root: Path) -> Path:
    """One directory per page and host count (and services share), so a quick web and a full one coexist."""
    return root / (
        f"web-{spec.pages}x{spec.hosts}" + (f"-services{spec.services:g}" if spec.services else "")
    )


def synthetic_wms(body: bytes, copies: int) -> bytes:
    """``body`` with its top-level layer's children repeated ``copies`` times, names made unique."""
    text = body.decode("iso-8859-1")
    start = text.index("<Layer", text.index("<Layer") + 1)
    end = text.rindex("</Layer>", 0, text.rindex("</Layer>")) + len("</Layer>")
    children = text[start:end]
    repeated = "".join(
        re.sub(r"<Name>([^<]+)</Name>", rf"<Name>\1_{i}</Name>", children) for i in range(copies)
    )
    return (text[:start] + repeated + text[end:]).encode("iso-8859-1")


def capabilities_documents() -> dict[str, bytes]:
    """File name -> body of the documents the services-heavy variant serves, the large synthetic WMS
    (``synthetic-<largest WMS>``) included."""
    documents = {
        path.name: path.read_bytes()
        for folder in CAPABILITIES_SOURCES
        if folder.is_dir()
        for path in sorted(folder.glob("*.xml"))
    }
    wms = [name for name, body in documents.items() if b"WMT_MS_Capabilities" in body[:2000]]
    if wms:
        largest = max(wms, key=lambda name: len(documents[name]))
        documents[f"synthetic-{largest}"] = synthetic_wms(documents[largest], SYNTHETIC_COPIES)
    return documents


def page_file(host_dir: Path, index: int) -> Path:
    return host_dir / ("index.html" if index == 0 else page_path(index).lstrip("/"))


def tree_fanout(pages_per_host: int) -> int:
    """The smallest fanout (at least 4) whose tree holds the host's pages within ``MAX_LEVEL`` levels."""
    fanout = 4
    while sum(fanout**level for level in range(MAX_LEVEL + 1)) < pages_per_host:
        fanout += 1
    return fanout


class _PageWriter:
    """Writes one host's pages; ``links`` collects the (host, index) page targets of every page for the BFS."""

    def __init__(self, spec: WebSpec, rng: random.Random):
        self.spec = spec
        self.rng = rng
        self.links: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.private_pages: list[tuple[int, int]] = []
        self.capabilities = sorted(capabilities_documents()) if spec.services else []
        self.capabilities_links = 0

    def href(self, src: tuple[int, int], dst: tuple[int, int]) -> str:
        """A link to ``dst`` written the way real sites mix them: relative, root-relative or absolute."""
        path = page_path(dst[1])
        if dst[0] != src[0]:
            return self.spec.origin(dst[0]) + path
        roll = self.rng.random()
        if roll < 0.15:
            return self.spec.origin(dst[0]) + path
        if roll < 0.45 or dst[1] == 0:
            return path
        src_dir = page_path(src[1]).rsplit("/", 1)[0]
        dst_dir, name = path.rsplit("/", 1)
        if src_dir == dst_dir:
            return name
        return f"..{dst_dir}/{name}" if src[1] != 0 else path.lstrip("/")

    def link_targets(self, host: int, index: int, fanout: int) -> list[tuple[int, int]]:
        """Tree children first (they guarantee reach), then random pages here and on other hosts."""
        count = self.spec.pages_of(host)
        children = [(host, c) for c in range(index * fanout + 1, min(count, index * fanout + fanout + 1))]
        extra = max(0, self.rng.randint(10, 20) - len(children) - 1)
        targets = [*children]
        for _ in range(extra):
            other = (
                host
                if self.spec.hosts == 1 or self.rng.random() < 0.8
                else self.rng.randrange(self.spec.hosts)
            )
            targets.append((other, self.rng.randrange(self.spec.pages_of(other))))
        return targets

    def words(self, n: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def html(self, host: int, index: int, fanout: int) -> str:
        src = (host, index)
        targets = self.link_targets(host, index, fanout)
        self.links[src] = targets
        title = self.words(4).title()
        items = [
            f'<li><a href="{self.href(src, t)}">{self.rng.choice(_ANCHORS)}: {self.words(3)}</a></li>'
            for t in targets
        ]
        if self.rng.random() < 0.3:  # a fragment link: the same page again, to be deduplicated
            items.append(f'<li><a href="{self.href(src, targets[0])}#top">Top</a></li>')
        if self.rng.random() < 0.05:  # robots.txt disallows this area
            self.private_pages.append(src)
            items.append(f'<li><a href="{PRIVATE_DIR}r{index:05d}.html">Staff only</a></li>')
        if self.rng.random() < 0.03:  # a document link both crawlers skip by extension
            items.append(f'<li><a href="/docs/report-{index}.pdf">Annual report (PDF)</a></li>')
        if self.capabilities and self.rng.random() < self.spec.services:  # a service's capabilities
            name = self.rng.choice(self.capabilities)
            self.capabilities_links += 1
            items.append(
                f'<li><a href="{CAPABILITIES_DIR}{name}?copy={index}">Service: {self.words(2)}</a></li>'
            )
        body = [f"<p>{self.words(self.rng.randint(25, 60))}.</p>" for _ in range(3)]
        if self.rng.random() < 0.3:  # a plain-text URL of a page that is also linked by an anchor
            mention = self.rng.choice(targets)
            body.append(
                f"<p>Mirror: {self.spec.origin(mention[0])}{page_path(mention[1])} ({self.words(5)}).</p>"
            )
        target_size = self.rng.randint(2000, 5000)
        head = (
            f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
            f'<meta name="description" content="{self.words(12)}">\n</head>\n<body>\n'
            f'<header><nav><a href="/">Home</a> | <span>{self.words(2)}</span></nav></header>\n'
            f"<main>\n<h1>{title}</h1>\n"
        )
        tail = f"</main>\n<footer><p>{self.words(8)}</p></footer>\n</body>\n</html>\n"
        links = '<ul class="links">\n' + "\n".join(items) + "\n</ul>\n"
        page = head + "\n".join(body) + "\n" + links + tail
        while len(page) < target_size:  # pad with prose to a realistic size
            page = page.replace("</main>", f"<p>{self.words(40)}.</p>\n</main>", 1)
        return page


def reusable(spec: WebSpec, web: Path, generator: str) -> dict | None:
    """The manifest of the web in ``web`` when ``generator`` wrote it from ``spec``; otherwise None, and the
    folder is removed for a new web."""
    manifest_file = web / MANIFEST
    if manifest_file.exists():
        manifest = json.loads(manifest_file.read_text())
        if manifest.get("spec") == asdict(spec) and manifest.get("generator") == generator:
            return manifest
    if web.exists():
        shutil.rmtree(web)
    return None


def generate(spec: WebSpec, root: Path = DEFAULT_ROOT) -> dict:
    """Writes the web under ``root`` (reused while spec and generator are unchanged); returns its manifest."""
    web = web_dir(spec, root)
    manifest = reusable(spec, web, GENERATOR_DIGEST)
    if manifest is not None:
        return manifest
    rng = random.Random(spec.seed)
    writer = _PageWriter(spec, rng)
    total_bytes = 0
    for host in range(spec.hosts):
        host_dir = web / f"h{host}"
        count = spec.pages_of(host)
        fanout = tree_fanout(count)
        for d in range(0, count, PAGES_PER_DIR):
            (host_dir / f"s{d // PAGES_PER_DIR:03d}").mkdir(parents=True, exist_ok=True)
        (host_dir / PRIVATE_DIR.strip("/")).mkdir()
        (host_dir / "robots.txt").write_text(f"User-agent: *\nDisallow: {PRIVATE_DIR}\n")
        if writer.capabilities:
            (host_dir / CAPABILITIES_DIR.strip("/")).mkdir()
            for name, body in capabilities_documents().items():
                (host_dir / CAPABILITIES_DIR.strip("/") / name).write_bytes(body)
        for index in range(count):
            data = writer.html(host, index, fanout).encode()
            total_bytes += len(data)
            page_file(host_dir, index).write_bytes(data)
    # the disallowed area exists: a crawler ignoring robots gets 200s
    for host, index in writer.private_pages:
        (web / f"h{host}" / PRIVATE_DIR.strip("/") / f"r{index:05d}.html").write_text("<p>private</p>\n")
    levels = bfs_levels(spec, writer.links)
    if len(levels) != spec.pages or max(levels.values()) > MAX_LEVEL:
        raise RuntimeError(f"web not reachable within {MAX_LEVEL} levels: {len(levels)}/{spec.pages} pages")
    manifest = {
        "spec": asdict(spec),
        "generator": GENERATOR_DIGEST,
        "seeds": spec.seeds(),
        "pages": spec.pages,
        "links": sum(len(t) for t in writer.links.values()),
        "private_links": len(writer.private_pages),
        "capabilities_links": writer.capabilities_links,
        "bytes": total_bytes,
        "pages_per_level": dict(sorted(Counter(levels.values()).items())),
    }
    (web / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return manifest


def bfs_levels(
    spec: WebSpec, links: dict[tuple[int, int], list[tuple[int, int]]]
) -> dict[tuple[int, int], int]:
    """Level of every page reached by a breadth-first crawl from the hosts' roots."""
    levels = {(h, 0): 0 for h in range(spec.hosts)}
    queue = deque(levels)
    while queue:
        page = queue.popleft()
        for target in links[page]:
            if target not in levels:
                levels[target] = levels[page] + 1
                queue.append(target)
    return levels


def page_urls(spec: WebSpec) -> set[str]:
    """Every generated page's URL, to count how many of them a crawler reached."""
    return {spec.origin(h) + page_path(i) for h in range(spec.hosts) for i in range(spec.pages_of(h))}


def access_log(root: Path = DEFAULT_ROOT) -> Path:
    """nginx's access log, one ``<address>:<port> <request uri> <status>`` line per request."""
    return root / "access.log"


def nginx_conf(
    spec: WebSpec,
    root: Path = DEFAULT_ROOT,
    log_requests: bool = False,
    host_directives: Mapping[int, str] | None = None,
) -> Path:
    """An nginx config serving host i from ``<web_dir>/h<i>``; its pid, logs and temp files stay under root.

    ``log_requests`` turns on a buffered access log (about 4 µs of nginx CPU per request, against milliseconds
    in a crawler); it is complete on disk once nginx has stopped. ``host_directives`` adds directives to the
    server block of the hosts it names (host index -> directives).
    """
    host_directives = host_directives or {}
    web = web_dir(spec, root)
    log = f"access_log {access_log(root)} crawl buffer=256k;" if log_requests else "access_log off;"
    servers = "\n".join(
        f"  server {{ listen {spec.address(h)}:{spec.port}; root {web / f'h{h}'}; "
        + (f"{host_directives[h]} " if h in host_directives else "")
        + f"location {CAPABILITIES_DIR} {{ if ($probe) {{ return 404; }} }} }}"
        for h in range(spec.hosts)
    )
    http = f"""  log_format crawl '$server_addr:$server_port $request_uri $status';
  {log}
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 65s;
  keepalive_requests 100000;
  types {{ text/html html; text/plain txt; application/xml xml; }}
  default_type application/octet-stream;
  index index.html;
  # a static file host: GetCapabilities probes of a capabilities file find nothing
  map $arg_service $probe {{ default 1; "" 0; }}
{servers}"""
    return write_nginx_conf(root, "bench/synthetic_web.py", http)


def write_nginx_conf(root: Path, generator: str, http: str) -> Path:
    """``root``/nginx.conf: one worker, its pid file, error log and temporary files under ``root``, and
    ``http`` (directives and server blocks) as its http block."""
    conf = f"""# generated by {generator}
worker_processes 1;
worker_rlimit_nofile 8192;
pid {root / "nginx.pid"};
error_log {root / "nginx-error.log"} warn;
events {{ worker_connections 4096; }}
http {{
  client_body_temp_path {root / "tmp"};
  proxy_temp_path {root / "tmp"};
  fastcgi_temp_path {root / "tmp"};
  uwsgi_temp_path {root / "tmp"};
  scgi_temp_path {root / "tmp"};
{http}
}}
"""
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    path = root / "nginx.conf"
    path.write_text(conf)
    return path


def _wait_listening(address: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def start_nginx(
    spec: WebSpec,
    root: Path = DEFAULT_ROOT,
    log_requests: bool = False,
    host_directives: Mapping[int, str] | None = None,
) -> int:
    """Starts our own nginx master (daemonized, pid file under root) with an empty access log; returns its pid."""
    access_log(root).unlink(missing_ok=True)
    conf = nginx_conf(spec, root, log_requests, host_directives)
    run_nginx(conf, root, [(spec.address(h), spec.port) for h in range(spec.hosts)])
    return int((root / "nginx.pid").read_text())


def run_nginx(conf: Path, root: Path, listening: list[tuple[str, int]]) -> None:
    """Starts our own nginx master with ``conf`` (daemonized, pid file under ``root``), once any master left
    there is stopped, and returns when every (address, port) of ``listening`` accepts connections."""
    stop_nginx(root)  # a master left over from an interrupted run holds the ports
    subprocess.run(["nginx", "-c", str(conf), "-p", str(root), "-g", "user root;"], check=True)
    for address, port in listening:
        _wait_listening(address, port)


def stop_nginx(root: Path = DEFAULT_ROOT) -> None:
    """Stops the nginx master whose pid file is under root, if it runs; its log buffers are then on disk."""
    pid_file = root / "nginx.pid"
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGQUIT)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGTERM)


@contextmanager
def serving(
    spec: WebSpec,
    root: Path = DEFAULT_ROOT,
    log_requests: bool = False,
    host_directives: Mapping[int, str] | None = None,
) -> Iterator[dict]:
    """Generates the web, serves it while the block runs, then stops nginx."""
    manifest = generate(spec, root)
    start_nginx(spec, root, log_requests, host_directives)
    try:
        yield manifest
    finally:
        stop_nginx(root)


def main() -> None:
    defaults = WebSpec()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pages", type=int, default=defaults.pages)
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--services", type=float, default=0.0, help="share of pages linking capabilities")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--serve", action="store_true", help="serve the web until Ctrl-C")
    args = parser.parse_args()
    spec = WebSpec(pages=args.pages, hosts=args.hosts, services=args.services)
    if not args.serve:
        print(json.dumps(generate(spec, args.root), indent=1))
        return
    with serving(spec, args.root) as manifest:
        print("serving", " ".join(manifest["seeds"]), "- Ctrl-C stops")
        with suppress(KeyboardInterrupt):
            signal.pause()


if __name__ == "__main__":
    main()
