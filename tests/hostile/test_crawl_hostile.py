"""A whole crawl through hostile servers: each bad link ends in a counted, logged failure, and the good
resources beside them are still found."""

import asyncio
import io
import json
import logging
import time
import zipfile

from geoweb.crawl.jsonl import crawl_to_jsonl
from tests.hostile.servers import CAPABILITIES, HostileServer, PagesServer, loopback_settings

KML = b"""<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><name>Good</name>
<Placemark><Point><coordinates>5,45</coordinates></Point></Placemark></Document></kml>"""
LAUGHS = b"""<?xml version="1.0"?><!DOCTYPE kml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]><kml xmlns="http://www.opengis.net/kml/2.2"><name>&c;</name></kml>"""
EXTERNAL = b"""<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<WMS_Capabilities version="1.3.0" xmlns="http://www.opengis.net/wms"><Service><Title>&x;</Title></Service>
</WMS_Capabilities>"""


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("doc.kml", b"\0" * 60_000_000)
    return buffer.getvalue()


HOSTILE_PATHS = [
    "/stall", "/drip", "/endless", "/huge", "/gzip-bomb", "/loop/a", "/chain/9", "/status/500",
    "/flaky/503?key=k&fail=1", "/charset/cp1251", "/wrong-type",
]  # fmt: skip


def test_a_crawl_survives_every_hostile_link_and_keeps_the_good_ones(caplog):
    with HostileServer(robots="User-agent: *\nDisallow: /ok\n") as hostile:
        links = [hostile.url(p) for p in HOSTILE_PATHS]
        links += [
            hostile.url("/ok"),
            f"http://127.0.0.2:{hostile.port}/ok",
        ]  # robots.txt; not an allowed host
        links += [
            hostile.url(f"/redirect?to=http://localhost:{hostile.port}/ok")
        ]  # redirect to a private address
        links += [
            "/good.kml",
            "/laughs.kml",
            "/bomb.kmz",
            "/external.xml?service=WMS",
            "/broken.xml?service=WFS",
        ]
        seed = "".join(f'<a href="{link}">x</a>' for link in links).encode()
        pages = {
            "/": ("text/html", b"<html><body>" + seed + b"</body></html>"),
            "/good.kml": ("application/vnd.google-earth.kml+xml", KML),
            "/laughs.kml": ("application/vnd.google-earth.kml+xml", LAUGHS),
            "/bomb.kmz": ("application/vnd.google-earth.kmz", zip_bomb()),
            "/external.xml": ("text/xml", EXTERNAL),
            "/broken.xml": ("text/xml", CAPABILITIES[:80]),
        }
        with PagesServer(pages) as site:
            settings = loopback_settings(hostile, site, max_level=1, total_timeout=1.0)
            out = io.StringIO()
            started = time.monotonic()
            with caplog.at_level(logging.INFO):
                report = asyncio.run(crawl_to_jsonl([site.url("/")], settings, ["KML", "WMS", "WFS"], out))
            seconds = time.monotonic() - started
        assert "/ok" not in hostile.paths()  # robots.txt held

    found = {(r["url"].rsplit("/", 1)[-1], r["type"]) for r in map(json.loads, out.getvalue().splitlines())}
    # the good file, and the capabilities document served as image/png
    assert found == {("good.kml", "KML"), ("wrong-type", "WMS")}
    stats = report.stats
    assert stats["fail/timeout"] >= 2  # stall, drip
    assert stats["fail/redirects"] >= 2  # loop, chain of 9
    assert stats["fail/blocked_address"] >= 2  # 127.0.0.2 and the redirect to localhost
    assert stats["skip/robots_disallowed"] == 1
    assert stats["fetch/truncated"] >= 3  # endless, huge, gzip bomb stop at the cap
    assert stats["kml/miss/unsafe_content"] == 2  # billion laughs, zip bomb
    assert stats["ogc/unsafe_content"] >= 1 and stats["ogc/malformed"] >= 1
    assert seconds < 20
    # every failure is in the log with its URL
    logged = caplog.text
    for path in ("/stall", "/loop/a", "127.0.0.2", "laughs.kml", "bomb.kmz"):
        assert path in logged, path
