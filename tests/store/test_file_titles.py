"""Titles read from files' content are kept by the store, on every re-crawl, and searched; a file without
one keeps a null title (GeoHub shows the file name as the last resort, the store never holds it)."""

import uuid

from geoweb.models import Dataset, Resource
from tests.store.pages import WHEN, page


def files(site: str) -> list[Resource]:
    relief = Resource(
        url=f"{site}/dem/relief.tif", type="GEOTIFF", title="Alpine relief 2024", abstract="Shaded, 20 m",
        datasets=[Dataset(name="relief", title="Alpine relief 2024", bbox=(6.0, 45.5, 10.0, 47.9))],
        bbox=(6.0, 45.5, 10.0, 47.9), extra={"crs": "EPSG:4326"}, discovered_at=WHEN,
    )  # fmt: skip
    wards = Resource(
        url=f"{site}/data/districts.zip", type="SHAPEFILE", title="Central Tokyo wards",
        abstract="Ward boundaries, simplified.",
        datasets=[Dataset(name="districts", title="Central Tokyo wards", bbox=(139.0, 35.0, 139.6, 35.2),
                          extra={"features": 3, "abstract": "Ward boundaries, simplified."})],
        bbox=(139.0, 35.0, 139.6, 35.2), discovered_at=WHEN,
    )  # fmt: skip
    untitled = Resource(
        url=f"{site}/files/track.kml", type="KML", datasets=[Dataset(name=None)], discovered_at=WHEN
    )
    return [relief, wards, untitled]


def stored(store, site: str) -> dict[str, tuple]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute("SELECT url, title, abstract FROM resources WHERE url LIKE %s", (site + "/%",))
        return {url.removeprefix(site): (title, abstract) for url, title, abstract in cur.fetchall()}


def test_file_titles_are_kept_on_every_crawl_and_searched(store, site):
    expected = {
        "/dem/relief.tif": ("Alpine relief 2024", "Shaded, 20 m"),
        "/data/districts.zip": ("Central Tokyo wards", "Ward boundaries, simplified."),
        "/files/track.kml": (None, None),
    }
    for _ in range(2):  # a first crawl, then one that finds the same files again
        run_id = f"test-{uuid.uuid4().hex[:12]}"
        store.runs.begin(run_id, {"seeds": [site + "/"]})
        store.frontier.commit_pages(run_id, [page(site + "/", 0, None, files(site))], 4)
        assert stored(store, site) == expected
        records = {r["url"].removeprefix(site): r for r in store.resources.export(run_id)}
        assert {url: (r["title"], r["abstract"]) for url, r in records.items()} == expected
        assert records["/data/districts.zip"]["dataset_list"][0]["title"] == "Central Tokyo wards"
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "SELECT url FROM resources WHERE url LIKE %s AND search @@ websearch_to_tsquery('english', %s)",
            (site + "/%", "tokyo wards"),
        )
        assert [row[0] for row in cur.fetchall()] == [site + "/data/districts.zip"]
