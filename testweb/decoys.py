"""The decoy server: our own aiohttp app for the behaviours no real server software has on purpose.

A crawler must report nothing here except the echo endpoint, which is one WMS however it is asked.
Run: ``python -m testweb.decoys --port 18020 --echo-document FILE --access-log FILE``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from html import escape
from pathlib import Path

from aiohttp import web

COMBINED_LOG_FORMAT = '%a - - %t "%r" %s %b "%{Referer}i" "%{User-Agent}i"'
SLOW_SECONDS = 5.0
EXCEPTION_REPORT = b"""<?xml version="1.0" encoding="UTF-8"?>
<ServiceExceptionReport version="1.1.1" xmlns="http://www.opengis.net/ogc">
  <ServiceException code="NoApplicableCode">Service temporarily unavailable: database connection failed.</ServiceException>
</ServiceExceptionReport>
"""


def html_page(title: str, body: str) -> web.Response:
    text = (
        f"<!DOCTYPE html>\n<html><head><title>{escape(title)}</title></head><body>\n{body}\n</body></html>\n"
    )
    return web.Response(text=text, content_type="text/html")


async def calendar(request: web.Request) -> web.Response:
    """The crawler trap: every month links to the next, forever."""
    year, month = int(request.match_info["year"]), int(request.match_info["month"])
    next_year, next_month = (year + 1, 1) if month == 12 else (year, month + 1)
    return html_page(
        f"Events {year}-{month:02d}",
        f"<h1>Events {year}-{month:02d}</h1><p>No events this month.</p>\n"
        f'<a href="/calendar/{next_year}/{next_month:02d}">Next month</a>',
    )


async def slow(request: web.Request) -> web.Response:
    await asyncio.sleep(SLOW_SECONDS)
    return html_page("Slow page", "<p>Thank you for waiting.</p>")


async def soft_404(request: web.Request) -> web.Response:
    """A missing file answered with 200 and an HTML error page, as many CMSs do."""
    return html_page("Page not found", f"<h1>Sorry, {escape(request.path)} does not exist.</h1>")


async def html_everything(request: web.Request) -> web.Response:
    return html_page("Field data portal", "<h1>Welcome to the field data portal</h1><p>Please log in.</p>")


async def exception_only(request: web.Request) -> web.Response:
    return web.Response(body=EXCEPTION_REPORT, content_type="application/vnd.ogc.se_xml")


def make_app(echo_document: bytes) -> web.Application:
    async def echo(request: web.Request) -> web.Response:
        """The same WMS capabilities whatever service, version or request is asked for."""
        return web.Response(body=echo_document, content_type="text/xml")

    app = web.Application()
    app.router.add_get(r"/calendar/{year:\d+}/{month:\d+}", calendar)
    app.router.add_get("/slow", slow)
    app.router.add_get("/files/{name}", soft_404)
    app.router.add_route("*", "/ows/portal", html_everything)
    app.router.add_route("*", "/ows/broken", exception_only)
    app.router.add_route("*", "/ows/echo", echo)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--echo-document", type=Path, required=True)
    parser.add_argument("--access-log", type=Path, required=True)
    args = parser.parse_args()
    access = logging.getLogger("aiohttp.access")
    access.setLevel(logging.INFO)
    access.addHandler(logging.FileHandler(args.access_log))
    web.run_app(
        make_app(args.echo_document.read_bytes()),
        host="127.0.0.1",
        port=args.port,
        access_log=access,
        access_log_format=COMBINED_LOG_FORMAT,
        shutdown_timeout=0.5,  # do not wait out a slow page on stop
        print=None,
    )


if __name__ == "__main__":
    main()
