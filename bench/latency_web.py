"""A web whose every response takes a fixed latency: many loopback hosts served by one aiohttp process.

Each host ``http://ADDRESS:PORT/`` is a root page linking to ``pages`` leaf pages (``/p0001.html``...), each
linking back to the root, so a crawl finds one URL per host at level 0 and all the leaves at level 1. Every
request, robots.txt included (404: everything allowed), is answered after ``latency`` seconds, so a crawl of
it waits on the web, not on the CPU.

    python -m bench.latency_web --hosts 127.0.0.2,127.0.0.3 --pages 100 --latency 0.1   # serve until killed
"""

from __future__ import annotations

import argparse
import asyncio
import re

from aiohttp import web

PORT = 18300
_LEAF = re.compile(r"^/p(\d{4})\.html$")


def root_page(pages: int) -> str:
    links = "".join(f'<li><a href="/p{i:04d}.html">Dataset {i}</a></li>' for i in range(1, pages + 1))
    return f"<!doctype html><html><head><title>Catalogue</title></head><body><ul>{links}</ul></body></html>"


def leaf_page(index: int) -> str:
    return (
        f"<!doctype html><html><head><title>Dataset {index}</title></head>"
        f'<body><p>Survey of land cover, sheet {index}.</p><a href="/">Catalogue</a></body></html>'
    )


def app(pages: int, latency: float) -> web.Application:
    """Serves the root and leaves of every host alike (the Host header does not matter), each after ``latency``."""
    root = root_page(pages)

    async def handle(request: web.Request) -> web.Response:
        await asyncio.sleep(latency)
        if request.path == "/":
            return web.Response(text=root, content_type="text/html")
        leaf = _LEAF.match(request.path)
        if leaf and 1 <= int(leaf.group(1)) <= pages:
            return web.Response(text=leaf_page(int(leaf.group(1))), content_type="text/html")
        raise web.HTTPNotFound()

    application = web.Application()
    application.router.add_get("/{tail:.*}", handle)
    return application


async def serve(addresses: list[str], port: int, pages: int, latency: float) -> None:
    """Listens on every address until cancelled."""
    runner = web.AppRunner(app(pages, latency), access_log=None)
    await runner.setup()
    for address in addresses:
        await web.TCPSite(runner, address, port, backlog=1024).start()
    print(
        f"serving {len(addresses)} hosts x {pages} pages on port {port}, {latency * 1000:.0f} ms", flush=True
    )
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_web", description=__doc__)
    parser.add_argument("--hosts", required=True, help="comma-separated loopback addresses to listen on")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--pages", type=int, default=100, help="leaf pages per host")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each response")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.hosts.split(","), args.port, args.pages, args.latency))


if __name__ == "__main__":
    main()
