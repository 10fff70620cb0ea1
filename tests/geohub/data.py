"""What the GeoHub tests search: resources loaded through the store as two harvest runs would load them, with
known places, words and sources, hostile titles, abstracts and URLs (script injection), and two services
with a history of revisit checks saved as a revisit saves them. Apart, for a database of its own: a revisit
run of a dozen services with known times and availabilities (``load_revisit_run``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from geoweb.models import CheckResult, Conformance, Dataset, Due, Page, Resource, RunStatus, ScheduleState
from geoweb.semantic import tag_datasets
from geoweb.settings import Settings
from geoweb.store import Store

SITE = "http://geoportal.example"
PORTAL = "http://portal.example.org"
RUN_1, RUN_2 = "run-1", "run-2"
SCRIPT = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'
HOSTILE_TITLE = f"Flood zones {SCRIPT}"
HOSTILE_ABSTRACT = f'<b onmouseover="alert(1)">bold</b> flood {SCRIPT}'
HOSTILE_URL = "javascript:document.title='pwned'//flood.kml"

TAIWAN = (119.5, 21.5, 122.5, 25.5)
SWITZERLAND = (5.9, 45.8, 10.5, 47.8)
SAHARA = (-5.0, 15.0, 5.0, 25.0)
FIJI = (177.0, -19.0, -179.0, -16.0)  # across the antimeridian


def layer(name: str, title: str | None, bbox, keywords=()) -> Dataset:
    return Dataset(name=name, title=title, bbox=bbox, keywords=list(keywords))


RIVERS = Resource(
    url=f"{SITE}/cgi-bin/mapserv?map=rivers.map",
    type="WMS",
    version="1.3.0",
    title="Rivers and lakes of Taiwan",
    abstract="Hydrography from the water agency: rivers, lakes and reservoirs.",
    keywords=["hydrology", "河川"],
    provider="Water Agency",
    datasets=[
        layer("rivers", "Rivers", (121.0, 24.8, 121.8, 25.3)),
        layer("reservoirs", "Reservoirs", (120.2, 22.5, 120.8, 23.2)),
    ],
    bbox=(120.0, 22.0, 122.0, 25.4),
)
PARCELS = Resource(
    url=f"{SITE}/wfs",
    type="WFS",
    version="2.0.0",
    title="Parcels of Bern",
    abstract="Cadastral parcels.",
    keywords=["cadastre"],
    datasets=[layer("parcels", "Parcels", (7.3, 46.9, 7.5, 47.0))],
    bbox=(7.3, 46.9, 7.5, 47.0),
)
# Without a box of its own: found by its words, never by a box.
STATIONS = Resource(
    url=f"{SITE}/sos",
    type="SOS",
    version="2.0.0",
    title="Desert weather stations",
    abstract="Temperature and wind observations.",
    datasets=[layer("north", "North stations", (-1.0, 19.0, 1.0, 21.0)), layer("none", "No place", None)],
)
ISLANDS = Resource(
    url=f"{SITE}/islands.zip",
    type="SHAPEFILE",
    title="Islands of Fiji",
    abstract="Coastlines.",
    datasets=[layer("islands", None, FIJI)],
    bbox=FIJI,
)
HOSTILE = Resource(
    url=HOSTILE_URL,
    type="KML",
    title=HOSTILE_TITLE,
    abstract=HOSTILE_ABSTRACT,
    keywords=[SCRIPT],
    datasets=[layer(SCRIPT, SCRIPT, (120.5, 23.0, 121.0, 23.5), keywords=[SCRIPT])],
    bbox=(120.5, 23.0, 121.0, 23.5),
)
# More datasets than a detail lists.
ARCHIVE = Resource(
    url=f"{SITE}/wcs",
    type="WCS",
    title="Coverage archive",
    datasets=[layer(f"coverage{i}", None, None) for i in range(1001)],
)
# Many resources in Switzerland, to page through. Their words rank alike: the first is judged conformant, the
# last (the newest) readable, so that only their conformance puts the first above the last.
SURVEY_DEFECTS = ["no Capability/Request section", "root element WMS_Capabilities without its namespace"]
SURVEY_OWSLIB_ERROR = (
    "OWSLib's WMS reader cannot read it: AttributeError: 'NoneType' object has no attribute 'find'"
)
JUDGED_SURVEYS = {
    0: {"conformance": Conformance.CONFORMANT},
    24: {"conformance": Conformance.READABLE, "defects": SURVEY_DEFECTS, "owslib_error": SURVEY_OWSLIB_ERROR},
}
ALPINE = [
    Resource(
        url=f"{SITE}/alps/{i}/wms",
        type="WMS",
        title=f"Alpine lake survey {i:02d}",
        datasets=[layer(f"lake{i}", f"Lake {i}", (7.0 + i * 0.05, 46.0, 7.1 + i * 0.05, 46.1))],
        bbox=(7.0 + i * 0.05, 46.0, 7.1 + i * 0.05, 46.1),
        **JUDGED_SURVEYS.get(i, {}),
    )
    for i in range(25)
]
CONFORMANT_SURVEY, READABLE_SURVEY = ALPINE[0], ALPINE[-1]
# Two services of one provider that their own words do not name.
AUTHORITY = "Regional Water Authority"
GAUGES = Resource(
    url=f"{SITE}/authority/wfs",
    type="WFS",
    title="Gauging network",
    provider=AUTHORITY,
    datasets=[layer("ms:gauges", "Gauges", (8.0, 47.0, 8.5, 47.3))],
    bbox=(8.0, 47.0, 8.5, 47.3),
)
DIKES = Resource(
    url=f"{SITE}/authority/wms",
    type="WMS",
    title="Dike inspections",
    provider=AUTHORITY,
    datasets=[layer("dikes2021", "Inspections 2021", (8.0, 47.0, 8.5, 47.3))],
    bbox=(8.0, 47.0, 8.5, 47.3),
)
# Water only through its dataset's concept (river, a watercourse, a water body, hydrography: "water"), and
# found by the name of that dataset.
VALAIS = Resource(
    url=f"{SITE}/valais/wms",
    type="WMS",
    title="Valais base map",
    datasets=[layer("gewaesserkarte_fluss", "Rivers", (7.0, 46.0, 8.0, 46.5))],
    bbox=(7.0, 46.0, 8.0, 46.5),
)
# The same word in one title and in the other's URL only.
ZERMATT_TITLE = Resource(
    url=f"{SITE}/orthophoto/wms",
    type="WMS",
    title="Zermatt orthophoto",
    datasets=[layer("ortho", None, (7.7, 45.9, 7.8, 46.0))],
    bbox=(7.7, 45.9, 7.8, 46.0),
)
ZERMATT_URL = Resource(
    url=f"{SITE}/zermatt/wms",
    type="WMS",
    title="Orthophoto mosaic",
    datasets=[layer("mosaic", None, (7.7, 45.9, 7.8, 46.0))],
    bbox=(7.7, 45.9, 7.8, 46.0),
)
SWISS = [GAUGES, DIKES, VALAIS, ZERMATT_TITLE, ZERMATT_URL]  # the text search's cases, all in Switzerland
# The test web's MapServer WMS (a real one: its GetMap answers a PNG), with its provinces layer's box.
TESTWEB_WMS = Resource(
    url="http://127.0.0.1:18010/cgi-bin/mapserv?map=regions",
    type="WMS",
    version="1.3.0",
    title="Regions of the test web",
    datasets=[layer("provinces", "Provinces", (5.0, 45.0, 8.0, 46.0))],
    bbox=(5.0, 45.0, 8.0, 46.0),
)
# Files without a title, in New Zealand, with what their detectors read of them: shown by their file names.
KAPITI = (174.9, -41.0, 175.3, -40.6)
HUTS = Resource(
    url=f"{SITE}/nz/k%C4%81piti%20huts.zip",
    type="SHAPEFILE",
    datasets=[
        Dataset(
            name="huts",
            bbox=KAPITI,
            extra={"path": "huts.shp", "features": 42, "geometry_type": "Point", "crs": "EPSG:2193"},
        )
    ],
    bbox=KAPITI,
    extra={"archive_bytes": 48_213, "files": ["huts.shp"], "inspected": "download"},
)
TRACKS = Resource(
    url=f"{SITE}/nz/tramping%20tracks.kml?download=1",
    type="KML",
    datasets=[Dataset(name="Tracks", bbox=KAPITI, extra={"placemarks": 12})],
    bbox=KAPITI,
    extra={"placemarks": 12, "format": "kml"},
)
FILES = [HUTS, TRACKS]
# A tile service of which its capabilities gave away only the type and version: no title, no layer, no box.
TILES = Resource(
    url=f"{SITE}/tiles/wmts/1.0.0/WMTSCapabilities.xml",
    type="WMTS",
    version="1.0.0",
    conformance=Conformance.IDENTIFIED,
    defects=["no Contents section"],
    owslib_error="OWSLib's WMTS reader cannot read it: KeyError: 'Contents'",
)
# Two harbour WMS whose words match alike, in Norway: the steady one (east) answered every check of the last 30 days
# and every GetMap within a second (both INSPIRE criteria met); the flaky one (west, the newer) failed one check in
# three. Their checks: (outcome, operation, total seconds), one every CHECK_HOURS, the last one now.
BERGEN = (5.2, 60.3, 5.4, 60.45)
STEADY = Resource(
    url=f"{SITE}/harbour/east/wms",
    type="WMS",
    title="Harbour depth soundings",
    datasets=[layer("soundings", "Soundings", BERGEN)],
    bbox=BERGEN,
)
FLAKY = Resource(
    url=f"{SITE}/harbour/west/wms",
    type="WMS",
    title="Harbour depth soundings",
    datasets=[layer("soundings", "Soundings", BERGEN)],
    bbox=BERGEN,
)
HARBOURS = [STEADY, FLAKY]
CHECK_HOURS = 12
STEADY_CHECKS = [("unchanged", "GetCapabilities", 0.3 + 0.02 * (i % 10)) for i in range(30)] + [
    ("unchanged", "GetMap", 0.5) for _ in range(24)
]
FLAKY_CHECKS = [("failed", "GetCapabilities", None) if i % 3 == 1 else ("unchanged", "GetCapabilities", 2.0)
                for i in range(30)]  # fmt: skip
ALL = [
    RIVERS,
    PARCELS,
    STATIONS,
    ISLANDS,
    HOSTILE,
    ARCHIVE,
    *ALPINE,
    *SWISS,
    TESTWEB_WMS,
    *FILES,
    TILES,
    *HARBOURS,
]


def found(resource: Resource, source: str, level: int) -> Page:
    """The crawl's page of a resource: its own URL, fetched from a link on ``source``."""
    return Page(resource.url, source, level, [resource])


def load(dsn: str) -> None:
    """run-1 finds the rivers WMS and the parcels WFS on a portal's catalogue page, which the search keyword
    "hydrography" led to; run-2 finds everything from the site's map page, the stations and the hostile KML
    a level deeper. No dataset gets a concept by hand: each has what the tagger gives it."""
    catalogue, maps, more = f"{PORTAL}/catalogue.html", f"{SITE}/maps.html", f"{SITE}/more/index.html"
    # as the crawl records them: rivers, reservoirs, lakes, parcels and stations get concepts
    for resource in ALL:
        tag_datasets(resource.datasets, Settings().concept_lcs_threshold)
    with Store(dsn) as store:
        store.runs.begin(RUN_1, {})
        pages = [found(r, catalogue, 1) for r in (RIVERS, PARCELS)]
        store.frontier.commit_pages(RUN_1, pages, 1, keyword_of={p.url: "hydrography" for p in pages})
        store.runs.end(RUN_1, RunStatus.SUCCESS, {})
        store.runs.begin(RUN_2, {})
        pages = [found(r, maps, 1) for r in (RIVERS, PARCELS, ISLANDS, ARCHIVE, *ALPINE, *SWISS, TESTWEB_WMS)]
        pages += [found(r, maps, 1) for r in (*FILES, TILES, *HARBOURS)]
        pages += [found(r, more, 2) for r in (STATIONS, HOSTILE)]
        store.frontier.commit_pages(RUN_2, pages, 1, keyword_of={})
        store.runs.end(RUN_2, RunStatus.SUCCESS, {})
        checked(store, STEADY, STEADY_CHECKS)
        checked(store, FLAKY, FLAKY_CHECKS)


def checked(store: Store, resource: Resource, checks: list[tuple]) -> None:
    """Save the checks of ``resource`` as a revisit saves them, then spread them over the past days, one every
    CHECK_HOURS and the last one now (a revisit can only save a check as it happens)."""
    (due,) = [d for d in store.revisits.due([resource.type], 100_000, 1e-6) if d.url == resource.url]
    for outcome, operation, seconds in checks:
        answered = {"first_byte_seconds": seconds / 2, "total_seconds": seconds} if seconds else {}
        result = CheckResult(due, outcome, seconds or 5.0, operation=operation, **answered)
        store.revisits.record_check("revisit-geohub", result, lambda outcome: (due.state, 3600.0))
    with store.transaction() as cur:
        cur.execute(
            "UPDATE resource_checks c SET checked_at = now() - %s * (n.last - n.position) FROM ("
            "    SELECT id, row_number() OVER (ORDER BY id) AS position, count(*) OVER () AS last"
            "    FROM resource_checks WHERE resource_id = %s) n WHERE c.id = n.id",
            (timedelta(hours=CHECK_HOURS), due.id),
        )


def resource_id(dsn: str, resource: Resource) -> int:
    with Store(dsn) as store, store.conn.cursor() as cur:
        cur.execute("SELECT id FROM resources WHERE url = %s AND type = %s", resource.key)
        return cur.fetchone()[0]


# --- a revisit run, for its report ---------------------------------------------------------------------------

REVISIT_RUN = "scheduled__2026-03-01T10:00:00+00:00"
EARLIER_REVISIT = "scheduled__2026-02-28T10:00:00+00:00"
# Service i: 12 earlier checks of 1 s, of which 11 - i failed; in the run, its capabilities answered in
# 0.1 i + 0.05 s. Service 0 changed, 1 timed out and is dead now, 2 was dead and answered again; GetMap fails
# for 3 and 4 (not an image) and 5 (an exception report), and draws for 6 to 9.
SERVICES = [Resource(url=f"{SITE}/services/{i}/wms", type="WMS", title=f"Service {i}") for i in range(12)]
HOSTILE_SERVICE = Resource(url=f"{SITE}/files/{SCRIPT}.kml", type="KML", title="Hostile file")
HOSTILE_REASON = "<script>document.title='pwned'</script>"
FAILED_GETMAP = {3: "not_image", 4: "not_image", 5: "ogc_exception"}


def load_revisit_run(dsn: str) -> None:
    """The services found by a crawl, checked by an earlier revisit, then by ``REVISIT_RUN``, each check saved
    as a revisit saves it."""
    with Store(dsn) as store:
        store.runs.begin(RUN_1, {})
        pages = [found(r, f"{SITE}/services.html", 1) for r in (*SERVICES, HOSTILE_SERVICE)]
        store.frontier.commit_pages(RUN_1, pages, 1, keyword_of={})
        store.runs.end(RUN_1, RunStatus.SUCCESS, {})
        due = {d.url: d for d in store.revisits.due(["WMS", "KML"], 100, 1e-6)}
        for i, service in enumerate(SERVICES):
            for n in range(12):
                outcome = "failed" if n < 11 - i else "unchanged"
                record(store, EARLIER_REVISIT, CheckResult(due[service.url], outcome, 1.0, total_seconds=1.0))
            record(store, REVISIT_RUN, _run_check(i, due[service.url]))
        getfile = CheckResult(due[HOSTILE_SERVICE.url], "failed", 0.1, operation="RangeRead",
                              error_reason=HOSTILE_REASON)  # fmt: skip
        hostile = CheckResult(
            due[HOSTILE_SERVICE.url], "unchanged", 0.1, total_seconds=0.01, operation_check=getfile
        )
        record(store, REVISIT_RUN, hostile)


def _run_check(i: int, due: Due) -> CheckResult:
    if i == 1:
        return CheckResult(due, "failed", 30.0, error_reason="timeout")
    if i == 2:
        due = replace(due, state=replace(due.state, dead=True))
    getmap = None
    if i in FAILED_GETMAP:
        getmap = CheckResult(due, "failed", 0.2, operation="GetMap", error_reason=FAILED_GETMAP[i])
    elif 6 <= i <= 9:
        getmap = CheckResult(due, "ok", 0.2, operation="GetMap", total_seconds=0.2)
    outcome = "changed" if i == 0 else "unchanged"
    return CheckResult(due, outcome, 0.1 * i + 0.05, total_seconds=0.1 * i + 0.05, operation_check=getmap)


def record(store: Store, run_id: str, result: CheckResult) -> None:
    """Save a check; the one that timed out leaves its service dead."""
    dead = result.error_reason == "timeout"
    store.revisits.record_check(run_id, result, lambda outcome: (ScheduleState(3600.0, dead=dead), 3600.0))
