"""Pages and resources as the crawl hands them to the store."""

from __future__ import annotations

from geoweb.models import Dataset, Page, Resource

WHEN = "2026-03-01T08:30:00+00:00"


def wms(site: str, level: int = 1, source: str | None = None, layers: int = 2) -> Resource:
    return Resource(
        url=f"{site}/cgi-bin/mapserv?map=rivers.map",
        type="WMS",
        version="1.3.0",
        title="Rivers and lakes of Taiwan",
        abstract="Hydrography from the water agency",
        keywords=["hydrology", "河川"],
        provider="Water Agency",
        datasets=[
            Dataset(
                name=f"layer{i}",
                title=f"Layer {i}",
                bbox=(120.0 + i % 20 / 10, 22.0, 122.0, 25.0),
                keywords=["water"],
                extra={"styles": ["default"]},
            )
            for i in range(layers)
        ],
        bbox=(120.0, 22.0, 122.1, 25.0),
        extra={"formats": ["image/png"]},
        content_sha256="ab" * 32,
        level=level,
        source_page=source,
        discovered_at=WHEN,
    )


def kml(site: str, level: int = 1, source: str | None = None) -> Resource:
    return Resource(
        url=f"{site}/files/trails.kml",
        type="KML",
        version="2.2",
        title="Trails",
        datasets=[
            Dataset(name=None, bbox=(121.5, 25.0, 121.5, 25.0), extra={"placemarks": 1}),
            Dataset(name=None, bbox=None, extra={"placemarks": 0}),
        ],
        bbox=(121.5, 25.0, 121.6, 25.1),
        extra={"placemarks": 1, "format": "kml"},
        level=level,
        source_page=source,
        discovered_at=WHEN,
    )


def page(url: str, level: int, source: str | None = None, resources=(), links=(), error=None) -> Page:
    return Page(url, source, level, resources=list(resources), links=[(u, url) for u in links], error=error)
