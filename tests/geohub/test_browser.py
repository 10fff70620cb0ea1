"""GeoHub end to end in headless Chromium: log in through Airflow's login page, search, page through results,
meet hostile titles (shown as text, never run), filter by panning and zooming the map, open a resource's
detail, and save screenshots of them (into docs/, and a copy in the test's directory)."""

from __future__ import annotations

import json
import math
import shutil
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg2
import pyogrio
import pytest

from tests.geohub import data
from tests.geohub.browser import BINARY, Chromium

DOCS = Path(__file__).resolve().parents[2] / "docs"  # where the screenshots go
TILE = 256  # pixels of the world at zoom 0 (Web Mercator)
START = (20.0, 0.0, 2)  # the page's first view: latitude, longitude, zoom

HITS = "[...document.querySelectorAll('#hits li')]"
HIT_TITLES = f"{HITS}.map(li => li.querySelector('.title').textContent)"


@pytest.fixture
def browser(tmp_path):
    if BINARY is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    chromium = Chromium(tmp_path)
    chromium.send("Network.enable")
    chromium.send("Log.enable")
    yield chromium
    chromium.close()


def log_in(browser: Chromium, server) -> None:
    browser.navigate(f"{server.base_url}/geohub/")
    browser.wait_for(
        "location.pathname === '/auth/login' && !!document.querySelector('input[name=password]')"
    )
    browser.type_text("input[name=username]", server.username)
    browser.type_text("input[name=password]", server.password)
    browser.wait_for("!document.querySelector('button[type=submit]').disabled")
    browser.click("button[type=submit]")
    browser.wait_for("location.pathname === '/geohub/' && document.readyState === 'complete'")


def search_for(browser: Chromium, text: str) -> None:
    before = searches(browser)
    browser.type_text("#q", text)
    browser.press_enter()
    wait_for_results(browser, before)


def searches(browser: Chromium) -> list[str]:
    """The URLs of the page's API searches so far, in order."""
    return [
        e["params"]["request"]["url"]
        for e in browser.events
        if e["method"] == "Network.requestWillBeSent"
        and "/geohub/api/search?" in e["params"]["request"]["url"]
    ]


def wait_for_results(browser: Chromium, before: list[str], timeout: float = 30.0) -> str:
    """Waits until a search newer than ``before`` is shown; returns its URL."""
    deadline = time.monotonic() + timeout
    while len(searches(browser)) <= len(before):  # events come in with the answers to commands: keep asking
        assert time.monotonic() < deadline, "the page sent no new search"
        browser.evaluate("new Promise(done => setTimeout(done, 100))")
    browser.wait_for("/^(Results|Nothing)/.test(document.getElementById('status').textContent)")
    return searches(browser)[-1]


def pixel(browser: Chromium, lat: float, lon: float) -> tuple[float, float]:
    """Where a place is on the page in the first view (Web Mercator at START's zoom around its center)."""
    rect = browser.evaluate(
        "(r => [r.left, r.top, r.width, r.height])(document.getElementById('map').getBoundingClientRect())"
    )
    center_lat, center_lon, zoom = START
    size = TILE * 2**zoom

    def world(la: float, lo: float) -> tuple[float, float]:
        y = math.log(math.tan(math.pi / 4 + math.radians(la) / 2))
        return (lo + 180) / 360 * size, (1 - y / math.pi) / 2 * size

    (x, y), (cx, cy) = world(lat, lon), world(center_lat, center_lon)
    return rect[0] + rect[2] / 2 + x - cx, rect[1] + rect[3] / 2 + y - cy


def api_answer(server, token: str, url: str) -> list[int]:
    """The ids the API gives for a search URL the page sent."""
    response = server.session(token).get(url, timeout=30)
    assert response.status_code == 200
    return [hit["id"] for hit in response.json()["results"]]


def shown_ids(browser: Chromium) -> list[int]:
    return [int(i) for i in browser.evaluate(f"{HITS}.map(li => li.dataset.id)")]


def inside(box: list[float], lon: float, lat: float) -> bool:
    west, south, east, north = box
    return south <= lat <= north and (west <= lon <= east if west <= east else lon >= west or lon <= east)


def test_search_filter_by_map_and_detail(browser, geohub_server, token, tmp_path):
    log_in(browser, geohub_server)
    first = wait_for_results(browser, [])
    assert browser.evaluate("document.title") == "GeoHub"
    # the whole world is in view: every resource with a footprint, newest first, 20 a page, and the count
    # of those no map area finds
    assert len(shown_ids(browser)) == 20 and shown_ids(browser) == api_answer(geohub_server, token, first)
    answer = geohub_server.session(token).get(first, timeout=30).json()
    assert answer["no_footprint"] >= 1
    left_out = [f"{answer['outside_box']} outside the map area"] if answer["outside_box"] else []
    left_out.append(f"{answer['no_footprint']} without a footprint")
    assert browser.evaluate("document.getElementById('status').textContent") == (
        f"Results 1\u201320 of {answer['total']} in the map area \u00b7 {', '.join(left_out)}"
    )

    # a search, and its next page
    search_for(browser, "survey")
    first_page = browser.evaluate(HIT_TITLES)
    before = searches(browser)
    browser.click("#next")
    wait_for_results(browser, before)
    second_page = browser.evaluate(HIT_TITLES)
    assert (len(first_page), len(second_page)) == (20, 5)
    assert sorted(first_page + second_page) == sorted(r.title for r in data.ALPINE)

    # hostile titles, abstracts and URLs are shown as text, and nothing of them runs
    search_for(browser, "flood zones")
    (item,) = browser.evaluate(f"{HITS}.map(li => li.textContent)")
    assert data.HOSTILE_TITLE in item and "document.title" in item and data.HOSTILE_URL in item
    assert browser.evaluate("document.title") == "GeoHub"
    assert browser.evaluate("document.querySelectorAll('script').length") == 2
    assert browser.evaluate("document.querySelectorAll('#hits img, #hits b, #hits script').length") == 0
    assert browser.evaluate("[...document.links].filter(a => !/^https?:/.test(a.href)).length") == 0

    # no text: pan Taiwan to the middle of the map and zoom in; only what is in view remains
    search_for(browser, "")
    taiwan = pixel(browser, 23.7, 121.0)
    middle = pixel(browser, *START[:2])
    before = searches(browser)
    browser.drag(taiwan, middle)
    wait_for_results(browser, before)
    before = searches(browser)
    browser.wheel(middle, -500)
    url = wait_for_results(browser, before)
    box = [float(v) for v in parse_qs(urlsplit(url).query)["bbox"][0].split(",")]
    assert inside(box, 121.0, 23.7) and not inside(box, 7.4, 46.9) and box[2] - box[0] < 60
    assert shown_ids(browser) == api_answer(geohub_server, token, url)
    assert set(browser.evaluate(HIT_TITLES)) == {data.RIVERS.title, data.HOSTILE_TITLE}
    assert browser.evaluate("document.querySelectorAll('.leaflet-overlay-pane path').length") >= 2

    document(browser, tmp_path, "geohub.png")

    # a resource's detail: its datasets, drawn on the map
    browser.evaluate(
        f"{HITS}.find(li => li.textContent.includes({json.dumps(data.RIVERS.title)})).querySelector('.title').click()"
    )
    browser.wait_for("!document.getElementById('detail').hidden")
    rows = browser.wait_for(
        "[...document.querySelectorAll('#datasets tbody tr')].map(tr => tr.cells[1].querySelector('code').textContent)"
    )
    assert rows == ["rivers", "reservoirs"]
    concepts = browser.evaluate(
        "[...document.querySelectorAll('#datasets tbody tr')].map(tr => tr.querySelector('.concepts').textContent)"
    )
    assert concepts == ["river", "reservoir"]  # labels, from the concept list
    assert browser.evaluate("document.getElementById('detail-title').textContent") == data.RIVERS.title
    browser.screenshot(tmp_path / "geohub-detail.png")

    # the page asked nothing of anyone but GeoHub, and broke none of its own security policy
    requested = {
        e["params"]["request"]["url"] for e in browser.events if e["method"] == "Network.requestWillBeSent"
    }
    assert all(u.startswith((geohub_server.base_url, "data:")) for u in requested), requested
    logged = [e["params"]["entry"]["text"] for e in browser.events if e["method"] == "Log.entryAdded"]
    assert not [t for t in logged if "Content Security Policy" in t or "Refused" in t], logged


def test_the_concept_filter_narrows_the_search(browser, geohub_server):
    log_in(browser, geohub_server)
    options = browser.wait_for(
        "(o => o.length > 1 && o.map(x => x.value))([...document.querySelectorAll('#concept option')])"
    )
    assert {"", "lake", "water_body", "cadastral_parcel"} <= set(options) and "building" not in options
    browser.wait_for("/^(Results|Nothing)/.test(document.getElementById('status').textContent)")  # the first
    before = searches(browser)
    browser.evaluate(
        "(s => { s.value = 'cadastral_parcel'; s.dispatchEvent(new Event('change')); })"
        "(document.getElementById('concept'))"
    )
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["concept"] == ["cadastral_parcel"]
    assert browser.evaluate(HIT_TITLES) == [data.PARCELS.title]


def test_a_dead_resource_is_marked_and_the_answering_box_leaves_it_out(browser, geohub_server, geohub_dsn):
    with psycopg2.connect(geohub_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE resources SET last_status = 'dead' WHERE url = %s AND type = %s", data.PARCELS.key
        )
    try:
        log_in(browser, geohub_server)
        browser.wait_for("document.querySelectorAll('#concept option').length > 1")
        browser.wait_for("/^(Results|Nothing)/.test(document.getElementById('status').textContent)")
        before = searches(browser)
        browser.evaluate(
            "(s => { s.value = 'cadastral_parcel'; s.dispatchEvent(new Event('change')); })"
            "(document.getElementById('concept'))"
        )
        wait_for_results(browser, before)
        assert browser.evaluate(f"{HITS}.map(li => li.querySelector('.status.dead')?.textContent)") == [
            "dead"
        ]
        before = searches(browser)
        browser.evaluate(
            "(box => { box.checked = true; box.dispatchEvent(new Event('change')); })"
            "(document.getElementById('answering'))"
        )
        url = wait_for_results(browser, before)
        assert parse_qs(urlsplit(url).query)["answering"] == ["true"]
        assert browser.evaluate(HIT_TITLES) == []
    finally:
        with psycopg2.connect(geohub_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                "UPDATE resources SET last_status = 'ok' WHERE url = %s AND type = %s", data.PARCELS.key
            )


def test_the_airflow_ui_links_to_geohub_and_shows_it(browser, geohub_server):
    log_in(browser, geohub_server)
    browser.navigate(f"{geohub_server.base_url}/")
    link = "[...document.querySelectorAll('a')].find(a => a.textContent.trim() === 'GeoHub' || a.title === 'GeoHub')"
    href = browser.wait_for(f"(a => a && a.getAttribute('href'))({link})")
    assert href.endswith("plugin/geohub")
    browser.evaluate(f"{link}.click()")
    # the page, embedded in the UI (frame-ancestors 'self' allows it), searches as on its own
    frame = "document.querySelector('iframe')"
    browser.wait_for(f"!!{frame} && {frame}.src.endsWith('/geohub/')")
    hits = browser.wait_for(
        f"{frame}.contentDocument && {frame}.contentDocument.querySelectorAll('#hits li').length"
    )
    assert hits == 20


STATUS = "document.getElementById('status').textContent"
SELECTED_PATHS = "[...document.querySelectorAll('.leaflet-overlay-pane path[stroke=\"#d9480f\"]')]"


def type_counts(browser: Chromium) -> dict[str, int]:
    labels = browser.evaluate("[...document.querySelectorAll('#types label')].map(l => l.textContent.trim())")
    return {label.split(" (")[0]: int(label.split(" (")[1].rstrip(")")) for label in labels}


def test_the_page_counts_what_it_finds_remembers_the_search_and_keeps_a_detail_open(
    browser, geohub_server, tmp_path
):
    log_in(browser, geohub_server)
    wait_for_results(browser, [])

    # the filters' counts follow the query
    search_for(browser, "survey")
    assert browser.evaluate(STATUS) == "Results 1\u201320 of 25 in the map area"
    counts = type_counts(browser)
    assert counts["WMS"] == 25 and sum(counts.values()) == 25

    # the search lives in the address: its next page, Back to the first, and a reload keep it
    assert parse_qs(browser.evaluate("location.search.slice(1)")) == {"q": ["survey"]}
    before = searches(browser)
    browser.click("#next")
    wait_for_results(browser, before)
    assert parse_qs(browser.evaluate("location.search.slice(1)")) == {"q": ["survey"], "offset": ["20"]}
    assert browser.evaluate(STATUS) == "Results 21\u201325 of 25 in the map area"
    before = searches(browser)
    browser.evaluate("history.back()")
    wait_for_results(browser, before)
    assert browser.evaluate(STATUS) == "Results 1\u201320 of 25 in the map area"
    browser.navigate(f"{geohub_server.base_url}/geohub/?q=survey&offset=20")
    browser.wait_for(f"/^Results 21/.test({STATUS})")
    assert browser.evaluate("document.getElementById('q').value") == "survey"

    # what has no footprint is counted, and one button away
    search_for(browser, "coverage archive")
    browser.wait_for(f"{STATUS}.endsWith('1 without a footprint')")
    before = searches(browser)
    browser.click("#without-footprint")
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["footprint"] == ["none"]
    assert browser.evaluate(HIT_TITLES) == [data.ARCHIVE.title]
    assert browser.evaluate(STATUS) == "Results 1\u20131 of 1 without a footprint"
    document(browser, tmp_path, "geohub-no-footprint.png")
    browser.click("#without-footprint")

    # a detail zooms to its footprints and stays open while the map moves
    search_for(browser, "rivers taiwan")
    browser.evaluate(
        f"{HITS}.find(li => li.textContent.includes({json.dumps(data.RIVERS.title)})).querySelector('.title').click()"
    )
    browser.wait_for("!document.getElementById('detail').hidden")
    width = browser.wait_for(
        f"(p => p.length && p.every(x => x.getBoundingClientRect().width > 40) && "
        f"Math.max(...p.map(x => x.getBoundingClientRect().width)))({SELECTED_PATHS})"
    )
    assert width > 40  # at the first view's world zoom the rivers' layer is a few pixels wide
    sent = len(searches(browser))
    middle = pixel(browser, *START[:2])
    browser.drag(middle, (middle[0] + 150, middle[1] + 80))
    browser.evaluate("new Promise(done => setTimeout(done, 600))")  # past the page's 250 ms wait after a move
    assert browser.evaluate("!document.getElementById('detail').hidden")
    assert len(searches(browser)) == sent
    back_to_results_in_the_map_area(browser)


def document(browser: Chromium, tmp_path: Path, name: str) -> None:
    """A screenshot of the page, the pointer off the map (no tooltip in the picture), into docs/ and the
    test's directory."""
    browser.hover((5, 5))
    browser.screenshot(tmp_path / name)
    shutil.copyfile(tmp_path / name, DOCS / name)


def options(browser: Chromium, select: str) -> list[tuple[str, str]]:
    """A menu's options: (value, label)."""
    return [
        tuple(option)
        for option in browser.evaluate(
            f"[...document.getElementById({json.dumps(select)}).options].map(o => [o.value, o.textContent])"
        )
    ]


def choose(browser: Chromium, select: str, value: str) -> None:
    browser.evaluate(
        f"(s => {{ s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})"
        f"(document.getElementById({json.dumps(select)}))"
    )


def open_detail(browser: Chromium, title: str) -> None:
    """Open the detail of the result titled ``title``."""
    open_hit(
        browser,
        f"{HITS}.find(li => li.querySelector('.title').textContent === {json.dumps(title)})",
        f"{DETAIL_TITLE} === {json.dumps(title)}",
    )


def open_hit(browser: Chromium, hit: str, shown: str, timeout: float = 30.0) -> None:
    """Click the result ``hit`` until its detail is open and ``shown``, and still is past the page's 250 ms
    wait after a map move. Back from a detail, the map may still be moving: each move searches again, which
    replaces the list and closes a detail, so a click between two polls would find its result gone."""
    opened = f"!document.getElementById('detail').hidden && {shown}"
    click = f"({opened}) || ((h => {{ if (h) h.querySelector('.title').click(); }})({hit}), false)"
    deadline = time.monotonic() + timeout
    while True:
        browser.wait_for(click, timeout=max(deadline - time.monotonic(), 0.1))
        browser.evaluate("new Promise(done => setTimeout(done, 600))")
        if browser.evaluate(opened):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the detail closed again each time it was opened: {hit}")


DETAIL_TITLE = "document.getElementById('detail-title').textContent"


def back_to_results_in_the_map_area(browser: Chromium) -> None:
    """Back from a detail that moved the map to its footprint: the results follow the map, so wait for them
    rather than click a result of the list they replace."""
    before = searches(browser)
    browser.click("#back")
    wait_for_results(browser, before)


def test_the_provider_facet_follows_the_search_and_filters_it(browser, geohub_server):
    log_in(browser, geohub_server)
    wait_for_results(browser, [])
    providers = browser.evaluate("[...document.querySelectorAll('#provider option')].map(o => o.textContent)")
    assert providers == ["any", f"{data.AUTHORITY} (2)", "Water Agency (1)"]
    search_for(browser, "dike")
    assert browser.evaluate("[...document.querySelectorAll('#provider option')].map(o => o.textContent)") == [
        "any",
        f"{data.AUTHORITY} (1)",
    ]
    search_for(browser, "")
    before = searches(browser)
    choose(browser, "provider", data.AUTHORITY)
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["provider"] == [data.AUTHORITY]
    assert sorted(browser.evaluate(HIT_TITLES)) == sorted([data.DIKES.title, data.GAUGES.title])
    assert parse_qs(browser.evaluate("location.search.slice(1)")) == {"provider": [data.AUTHORITY]}
    browser.navigate(browser.evaluate("location.href"))  # a reload keeps it
    browser.wait_for(f"/^Results 1\u20132 of 2/.test({STATUS})")
    assert browser.evaluate("document.getElementById('provider').value") == data.AUTHORITY


def test_the_level_menu_offers_the_levels_found_with_their_counts_and_filters(
    browser, geohub_server, tmp_path
):
    log_in(browser, geohub_server)
    browser.navigate(f"{geohub_server.base_url}/geohub/?in_view=false")
    browser.wait_for(f"/^Results/.test({STATUS})")
    deeper = [data.STATIONS, data.HOSTILE]  # found a level below the map page (data.load)
    levels = [("", "any"), ("1", f"1 ({len(data.ALL) - len(deeper)})"), ("2", f"2 ({len(deeper)})")]
    assert options(browser, "level") == levels  # only the levels that occur, not a fixed 0-10
    before = searches(browser)
    choose(browser, "level", "2")
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["level"] == ["2"]
    assert sorted(browser.evaluate(HIT_TITLES)) == sorted(r.title for r in deeper)
    assert browser.evaluate(STATUS).startswith("Results 1\u20132 of 2")
    assert options(browser, "level") == levels  # the other level stays offered, to switch to in one step
    document(browser, tmp_path, "geohub-facets.png")

    # the counts follow the query; the chosen level stays offered when the query has none of it
    search_for(browser, "rivers taiwan")
    assert options(browser, "level") == [("", "any"), ("1", "1 (1)"), ("2", "2 (0)")]
    assert browser.evaluate("document.getElementById('level').value") == "2"


def test_a_service_s_endpoint_layers_qgis_file_and_wms_preview(browser, geohub_server, testweb, tmp_path):
    browser.send(
        "Browser.grantPermissions",
        origin=geohub_server.base_url,
        permissions=["clipboardReadWrite", "clipboardSanitizedWrite"],
    )
    log_in(browser, geohub_server)
    wait_for_results(browser, [])
    search_for(browser, "regions test web")
    open_detail(browser, data.TESTWEB_WMS.title)

    # the endpoint, copied to the clipboard, and a visible "copied"
    capabilities = f"{data.TESTWEB_WMS.url}&service=WMS&request=GetCapabilities"
    assert browser.evaluate("document.getElementById('endpoint').textContent") == capabilities
    browser.click("#copy-endpoint")
    browser.wait_for("document.getElementById('copy-endpoint').dataset.copied === 'true'")
    assert browser.evaluate("document.getElementById('copy-endpoint').textContent") == "Copied"
    assert browser.evaluate("navigator.clipboard.readText()") == capabilities

    # the layer names, each with its copy
    names = browser.evaluate(
        "[...document.querySelectorAll('#datasets tbody td.name')]"
        ".map(td => [td.querySelector('code').textContent, td.querySelector('button.copy').dataset.copy])"
    )
    assert names == [["provinces", "provinces"]]
    browser.click("#datasets tbody td.name button.copy")
    browser.wait_for("document.querySelector('#datasets td.name button.copy').dataset.copied === 'true'")
    assert browser.evaluate("navigator.clipboard.readText()") == "provinces"

    # the QGIS connection file the link downloads
    connection = browser.evaluate(
        "fetch(document.getElementById('qgis-connection').href).then(r => r.text()).then(t => "
        "(d => [d.documentElement.tagName, d.querySelector('wms').getAttribute('url'), "
        "d.querySelector('wms').getAttribute('name')])(new DOMParser().parseFromString(t, 'application/xml')))"
    )
    assert connection == ["qgsWMSConnections", data.TESTWEB_WMS.url, data.TESTWEB_WMS.title]
    assert browser.evaluate("document.getElementById('qgis-connection').hasAttribute('download')")

    # the preview: a GetMap of the chosen layer from the MapServer itself, drawn over its box
    assert browser.evaluate("document.querySelectorAll('img.wms-preview').length") == 0  # only when asked
    browser.click("#show-preview")
    size = browser.wait_for(
        "(i => i && i.complete && i.naturalWidth > 0 && [i.naturalWidth, i.naturalHeight])"
        "(document.querySelector('img.wms-preview'))"
    )
    assert max(size) == 512 and min(size) > 100
    getmap = urlsplit(browser.evaluate("document.querySelector('img.wms-preview').src"))
    params = {k.upper(): v[0] for k, v in parse_qs(getmap.query, keep_blank_values=True).items()}
    assert getmap.netloc == "127.0.0.1:18010" and params["MAP"] == "regions"
    assert (params["REQUEST"], params["VERSION"], params["LAYERS"], params["CRS"]) == (
        "GetMap", "1.3.0", "provinces", "EPSG:4326",
    )  # fmt: skip
    assert [float(v) for v in params["BBOX"].split(",")] == [45.0, 5.0, 46.0, 8.0]  # 1.3.0: latitude first
    browser.wait_for(
        "document.getElementById('preview-status').textContent.startsWith('Preview of provinces')"
    )
    browser.evaluate("new Promise(done => setTimeout(done, 500))")  # the map's zoom to the layer ends
    document(browser, tmp_path, "geohub-detail.png")
    logged = [e["params"]["entry"]["text"] for e in browser.events if e["method"] == "Log.entryAdded"]
    assert not [t for t in logged if "Content Security Policy" in t], logged

    # a server that sends no image: the preview says so
    browser.navigate(f"{geohub_server.base_url}/geohub/?q=rivers+taiwan&in_view=false")
    browser.wait_for(f"/^Results/.test({STATUS})")
    open_detail(browser, data.RIVERS.title)
    browser.click("#show-preview")
    browser.wait_for("document.getElementById('preview-status').classList.contains('error')")
    assert browser.evaluate("document.getElementById('preview-status').textContent").startswith(
        "The service sent no image of rivers"
    )


def detail_fields(browser: Chromium) -> dict[str, str]:
    return browser.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#detail-fields dt')]"
        ".map(dt => [dt.textContent, dt.nextElementSibling.textContent]))"
    )


def test_files_are_shown_by_their_names_with_what_they_hold(browser, geohub_server):
    log_in(browser, geohub_server)
    wait_for_results(browser, [])
    browser.click("#in-view")  # New Zealand is off the first view's map
    search_for(browser, "huts")
    assert browser.evaluate(HIT_TITLES) == ["k\u0101piti huts.zip"]  # the file name, decoded
    open_detail(browser, "k\u0101piti huts.zip")
    fields = detail_fields(browser)
    assert fields["File"] == "48.2 KB" and fields["URL"] == data.HUTS.url
    details = browser.evaluate(
        "[...document.querySelectorAll('#datasets tbody tr')].map(tr => tr.cells[5].textContent)"
    )
    assert details == ["42 features \u00b7 Point \u00b7 EPSG:2193"]
    # its address to copy, and no QGIS connection or preview, which are for services
    assert browser.evaluate("document.getElementById('endpoint').textContent") == data.HUTS.url
    assert browser.evaluate("document.getElementById('qgis-connection').parentElement.hidden")
    assert browser.evaluate("document.getElementById('preview').hidden")
    browser.click("#back")
    search_for(browser, "tramping")
    assert browser.evaluate(HIT_TITLES) == ["tramping tracks.kml"]  # not its query string
    open_detail(browser, "tramping tracks.kml")
    assert detail_fields(browser)["File"] == "12 placemarks \u00b7 KML"


def test_the_export_button_downloads_the_search(browser, geohub_server, tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.send(
        "Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads), eventsEnabled=True
    )
    log_in(browser, geohub_server)
    wait_for_results(browser, [])
    search_for(browser, "survey")
    choose(browser, "export-format", "gpkg")
    href = browser.evaluate("document.getElementById('export').href")
    assert parse_qs(urlsplit(href).query)["q"] == ["survey"] and "bbox" in parse_qs(urlsplit(href).query)
    browser.click("#export")
    deadline = time.monotonic() + 60
    while not [e for e in browser.events if e["method"] == "Browser.downloadProgress"
               and e["params"]["state"] == "completed"]:  # fmt: skip
        assert time.monotonic() < deadline, "the download did not complete"
        browser.evaluate("new Promise(done => setTimeout(done, 200))")
    (path,) = downloads.iterdir()
    assert path.name.startswith("geohub-search-") and path.suffix == ".gpkg"
    assert sorted(pyogrio.read_dataframe(path, layer="resources")["title"]) == sorted(
        r.title for r in data.ALPINE
    )
    # the QGIS connections of the same search's WMS
    choose(browser, "export-format", "qgis:WMS")
    href = browser.evaluate("document.getElementById('export').href")
    assert urlsplit(href).path.endswith("/geohub/api/qgis-connections.xml")
    assert parse_qs(urlsplit(href).query)["service"] == ["WMS"]


def conformance_counts(browser: Chromium) -> dict[str, int]:
    labels = browser.evaluate(
        "[...document.querySelectorAll('#conformance label')].map(l => l.textContent.trim())"
    )
    return {label.split(" (")[0]: int(label.split(" (")[1].rstrip(")")) for label in labels}


def test_conformance_is_a_badge_a_detail_and_a_filter(browser, geohub_server):
    log_in(browser, geohub_server)
    wait_for_results(browser, [])
    assert conformance_counts(browser) == {"conformant": 1, "readable": 1, "identified": 0}  # the map area's

    # only what may need a second look is marked, its defects in the badge's tooltip
    search_for(browser, "alpine lake survey")
    assert browser.evaluate(f"{HITS}.filter(li => li.querySelector('.conformance')).length") == 0
    before = searches(browser)
    browser.click("#next")  # equal ranks: the readable one last, on the second page
    wait_for_results(browser, before)
    badges = browser.evaluate(
        f"{HITS}.map(li => li.querySelector('.conformance')).filter(b => b).map(b => [b.textContent, b.title])"
    )
    assert badges == [
        ["readable", f"its capabilities were read despite defects: {'; '.join(data.SURVEY_DEFECTS)}"]
    ]
    assert browser.evaluate(HIT_TITLES)[-1] == data.READABLE_SURVEY.title

    # the detail names the level, each defect and OWSLib's reason
    open_detail(browser, data.READABLE_SURVEY.title)
    fields = detail_fields(browser)
    assert fields["Conformance"] == "readable: its capabilities were read despite defects"
    assert fields["OWSLib"] == data.SURVEY_OWSLIB_ERROR
    defects = browser.evaluate(
        "[...document.querySelectorAll('#detail-fields ul.defects li')].map(li => li.textContent)"
    )
    assert defects == data.SURVEY_DEFECTS
    back_to_results_in_the_map_area(browser)
    # the map shows the readable one's area: the conformant one is opened from its page of the first view's
    assert data.CONFORMANT_SURVEY.title not in browser.evaluate(HIT_TITLES)
    browser.navigate(f"{geohub_server.base_url}/geohub/?q=alpine+lake+survey&offset=20")
    browser.wait_for(f"/^Results 21\u201325 of 25/.test({STATUS})")
    open_detail(browser, data.CONFORMANT_SURVEY.title)
    assert detail_fields(browser)["Conformance"].startswith("conformant: OWSLib reads its capabilities whole")
    assert "Defects" not in detail_fields(browser) and "OWSLib" not in detail_fields(browser)
    back_to_results_in_the_map_area(browser)

    # the filter: in the search, in the address, kept by a reload
    before = searches(browser)
    browser.evaluate(
        "(box => { box.checked = true; box.dispatchEvent(new Event('change')); })"
        "(document.querySelector('#conformance input[value=conformant]'))"
    )
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["conformance"] == ["conformant"]
    assert browser.evaluate(HIT_TITLES) == [data.CONFORMANT_SURVEY.title]
    assert parse_qs(browser.evaluate("location.search.slice(1)")) == {
        "q": ["alpine lake survey"], "conformance": ["conformant"],
    }  # fmt: skip
    browser.navigate(f"{geohub_server.base_url}/geohub/?conformance=identified&in_view=false")
    browser.wait_for(f"/^Results 1\u20131 of 1/.test({STATUS})")
    assert browser.evaluate(
        "[...document.querySelectorAll('#conformance input:checked')].map(b => b.value)"
    ) == ["identified"]
    assert browser.evaluate(f"{HITS}.map(li => li.querySelector('.conformance').textContent)") == [
        "identified"
    ]
    assert browser.evaluate(HIT_TITLES) == [data.TILES.url]  # no title: shown by its address


def inspire_counts(browser: Chromium) -> dict[str, int]:
    labels = browser.evaluate(
        "[...document.querySelectorAll('#inspire label')].map(l => l.textContent.trim())"
    )
    return {label.split(" (")[0]: int(label.split(" (")[1].rstrip(")")) for label in labels}


QUALITY_BADGES = (
    f"{HITS}.map(li => (b => [b.textContent, b.className, b.title])(li.querySelector('.quality')))"
)
CHART = "document.getElementById('checks-chart')"


def test_quality_is_a_badge_a_filter_and_a_chart_of_the_checks(browser, geohub_server, tmp_path):
    log_in(browser, geohub_server)
    browser.navigate(f"{geohub_server.base_url}/geohub/?q=harbour+soundings&in_view=false")
    browser.wait_for(f"/^Results 1\u20132 of 2/.test({STATUS})")

    # equal words: the steady service first, each with its badge, the rules in its tooltip
    badges = browser.evaluate(QUALITY_BADGES)
    assert [badge[:2] for badge in badges] == [
        ["100 % \u00b7 0.4 s", "quality good"], ["66.7 % \u00b7 2.0 s", "quality poor"],
    ]  # fmt: skip
    steady_tooltip, flaky_tooltip = (badge[2] for badge in badges)
    assert steady_tooltip.startswith("100 % of 54 checks over 30 days succeeded; median response 0.39 s")
    assert "INSPIRE view service availability (at least 99 %" in steady_tooltip and "): met" in steady_tooltip
    assert "INSPIRE view service performance (GetMap first byte within 5 s" in flaky_tooltip
    assert "): not enough checks" in flaky_tooltip
    assert browser.evaluate(HIT_TITLES) == [data.STEADY.title] * 2
    assert shown_urls(browser) == [data.STEADY.url, data.FLAKY.url]
    assert inspire_counts(browser) == {"met": 1, "not met": 1, "not enough checks": 0}
    search_for(browser, "parcels of bern")
    assert [badge[:2] for badge in browser.evaluate(QUALITY_BADGES)] == [["no checks", "quality none"]]

    # the filters: availability, then the INSPIRE verdict, in the search and in the address
    search_for(browser, "harbour soundings")
    before = searches(browser)
    choose(browser, "min_availability", "99")
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["min_availability"] == ["99"]
    assert shown_urls(browser) == [data.STEADY.url]
    choose(browser, "min_availability", "")
    before = searches(browser)
    browser.evaluate(
        "(box => { box.checked = true; box.dispatchEvent(new Event('change')); })"
        "(document.querySelector('#inspire input[value=\"not met\"]'))"
    )
    url = wait_for_results(browser, before)
    assert parse_qs(urlsplit(url).query)["inspire"] == ["not met"]
    browser.wait_for(f"/^Results 1\u20131 of 1/.test({STATUS})")
    assert shown_urls(browser) == [data.FLAKY.url]
    browser.navigate(browser.evaluate("location.href"))  # a reload keeps it
    browser.wait_for(f"/^Results 1\u20131 of 1/.test({STATUS})")
    assert browser.evaluate("[...document.querySelectorAll('#inspire input:checked')].map(b => b.value)") == [
        "not met"
    ]

    # the flaky one's detail: its figures with the rules named, its checks drawn, failures marked
    open_detail(browser, data.FLAKY.title)
    fields = detail_fields(browser)
    assert fields["Availability"].startswith("66.7 % of 30 checks over 30 days succeeded")
    assert fields["INSPIRE availability"].startswith(
        "not met \u00b7 INSPIRE view service availability: at least 99"
    )
    assert fields["INSPIRE performance"].startswith(
        "not enough checks \u00b7 INSPIRE view service performance"
    )
    assert fields["Response times"].startswith("GetCapabilities: median 2 s")
    browser.wait_for(f"!{CHART}.hidden")
    answered = sum(seconds is not None for _, _, seconds in data.FLAKY_CHECKS)
    assert browser.evaluate(f"{CHART}.querySelectorAll('circle').length") == answered
    assert (
        browser.evaluate(f"{CHART}.querySelectorAll('line.failed').length")
        == len(data.FLAKY_CHECKS) - answered
    )
    browser.click("#back")

    # the steady one's: a line per operation, every check on it
    browser.click("#inspire input[value='not met']")
    browser.wait_for(f"/^Results 1\u20132 of 2/.test({STATUS})")
    open_detail_of(browser, data.STEADY.url)
    lines = browser.wait_for(
        f"(g => g.length && g.map(s => [s.dataset.operation, s.querySelectorAll('circle').length]))"
        f"([...{CHART}.querySelectorAll('g.series')])"
    )
    assert lines == [["GetCapabilities", 30], ["GetMap", 24]]
    assert browser.evaluate(f"{CHART}.querySelectorAll('line.failed').length") == 0
    assert browser.evaluate(f"{CHART}.getBoundingClientRect().width") > 300  # drawn in the page
    browser.screenshot(tmp_path / "geohub-quality.png")
    logged = [e["params"]["entry"]["text"] for e in browser.events if e["method"] == "Log.entryAdded"]
    assert not [t for t in logged if "Content Security Policy" in t], logged


def shown_urls(browser: Chromium) -> list[str]:
    return browser.evaluate(f"{HITS}.map(li => li.querySelector('.url').textContent)")


def open_detail_of(browser: Chromium, url: str) -> None:
    """Open the detail of the result at ``url`` (the harbour services share their title), its chart drawn."""
    open_hit(
        browser,
        f"{HITS}.find(li => li.querySelector('.url').textContent === {json.dumps(url)})",
        f"{CHART}.querySelectorAll('g.series').length > 0",
    )
