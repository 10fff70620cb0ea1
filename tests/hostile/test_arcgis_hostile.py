"""Hostile and broken ArcGIS REST answers: each ends as a miss with a logged reason (or a resource without
what was broken), the caps hold, and nothing else of the run is lost."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from aiohttp import web

from geoweb.detect.arcgis import ArcGISDetector
from geoweb.settings import Settings
from tests.unit.test_arcgis import document, serving

ROOT = "/arcgis/rest/services"
MAP = f"{ROOT}/Hydro/Rivers/MapServer"
MAP_DOC = document("arcgis/rest/services/Hydro/Rivers/MapServer")
LAYERS_DOC = document("arcgis/rest/services/Hydro/Rivers/MapServer/layers")


def body(value) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def server(answers: dict[str, object], content_type: str = "text/plain") -> web.Application:
    """A server answering ``path`` (with ``?f=json`` or without) with ``answers[path]``: a document, raw
    bytes, or (status, bytes); anything else is a 404 page."""

    async def handle(request: web.Request) -> web.Response:
        answer = answers.get(request.path.rstrip("/") or "/")
        if answer is None:
            return web.Response(status=404, text="<html>Not found</html>", content_type="text/html")
        status, data = answer if isinstance(answer, tuple) else (200, body(answer))
        return web.Response(status=status, body=data, content_type=content_type)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    return app


def detect(answers: dict, path: str, settings: Settings | None = None, caplog=None):
    """(resources, stats, requests asked) for the page at ``path`` of a server giving ``answers``."""

    async def go():
        async with serving(server(answers), settings) as run:
            ctx = run.context()
            resources = await run.detect(path, ctx)
            return resources, ctx.stats, run.asked

    return asyncio.run(go())


def miss(answers: dict, path: str, reason: str, caplog, settings: Settings | None = None) -> str:
    """Asserts the page at ``path`` is no resource for ``reason``; returns the logged message."""
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        resources, stats, _ = detect(answers, path, settings)
    assert resources == []
    assert stats[f"arcgis/miss/{reason}"] == 1, dict(stats)
    (message,) = [r.getMessage() for r in caplog.records if r.name == "geoweb.detect"]
    assert path in message
    return message


@pytest.mark.parametrize(
    ("name", "answer", "reason"),
    [
        ("truncated JSON", json.dumps(MAP_DOC).encode()[:-40], "not_arcgis"),
        ("not JSON at all", b"\xff\xfe\x00garbage\x81", "not_arcgis"),
        ("an HTML error page with 200", b"<html><body>Service unavailable</body></html>", "not_arcgis"),
        ("a JSON array", [MAP_DOC], "not_arcgis"),
        ("NaN", json.dumps(MAP_DOC).replace('"maxScale": 0', '"maxScale": NaN', 1).encode(), "not_arcgis"),
        ("Infinity", json.dumps(MAP_DOC).replace('"maxScale": 0', '"maxScale": -Infinity', 1).encode(), "not_arcgis"),
        ("deep nesting", b'{"layers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "unsafe_content"),
        ("layers is not a list", {**MAP_DOC, "layers": {"0": "Gauges"}}, "not_arcgis"),
        ("no version, no spatial reference", {"layers": []}, "not_arcgis"),
        ("token required, HTTP 200", {"error": {"code": 499, "message": "Token Required", "details": []}},
         "token_required"),
        ("invalid token, HTTP 200", {"error": {"code": 498, "message": "Invalid Token"}}, "token_required"),
        ("forbidden, HTTP 403", (403, body({"error": {"code": 403, "message": "You do not have permissions"}})),
         "arcgis_error"),
        ("an error that is a string", {"error": "boom"}, "arcgis_error"),
        ("HTTP 500 with a page", (500, b"<html>Internal error</html>"), "http_status"),
    ],
)  # fmt: skip
def test_a_broken_service_answer_is_a_miss_with_its_reason(name, answer, reason, caplog):
    message = miss({MAP: answer}, MAP, reason, caplog)
    if reason == "token_required":
        assert "needs a token" in message


def test_a_service_json_over_the_body_cap_is_refused(caplog):
    padded = {**MAP_DOC, "description": "x" * 50_000}
    miss({MAP: padded}, MAP, "malformed", caplog, Settings(max_body_bytes=20_000))


@pytest.mark.parametrize(
    ("name", "root", "reason"),
    [
        ("currentVersion only", {"currentVersion": 10.81}, "not_arcgis"),
        ("an empty directory", {"currentVersion": 10.91, "folders": [], "services": []}, "not_arcgis"),
        ("folders as a string", {"currentVersion": 10.91, "folders": "Hydro", "services": []}, "not_arcgis"),
        ("wrong types everywhere", {"currentVersion": "ten", "folders": [1, None, {"a": 1}],
                                    "services": [{"name": 5, "type": []}, "MapServer", None]}, "not_arcgis"),
        ("names escaping the directory", {"folders": ["..", "../../etc", "http://elsewhere.example/x", "a?b=c"],
                                          "services": [{"name": "../../admin", "type": "MapServer"},
                                                       {"name": "x#y", "type": "MapServer"}]}, "not_arcgis"),
    ],
)  # fmt: skip
def test_a_directory_that_lists_nothing_usable_is_a_miss(name, root, reason, caplog):
    with caplog.at_level(logging.INFO, logger="geoweb.detect"):
        resources, stats, asked = detect({ROOT: root}, ROOT)
    assert resources == [] and stats[f"arcgis/miss/{reason}"] == 1, dict(stats)
    assert asked == []  # nothing listed was worth a request


def test_folder_loops_and_deep_folders_end(caplog):
    """Folders listing themselves and each other, and ever deeper ones: each read once, none deeper than
    three folders, and the folder cap holds."""
    answers = {
        ROOT: {
            "currentVersion": 10.91,
            "folders": ["A", "B"],
            "services": [{"name": "Top", "type": "MapServer"}],
        },
        f"{ROOT}/A": {"folders": ["A", "B", "A/A"], "services": []},
        f"{ROOT}/B": {"folders": ["A", "B", "B/C"], "services": []},
        f"{ROOT}/Top/MapServer": MAP_DOC,
        f"{ROOT}/Top/MapServer/layers": LAYERS_DOC,
    }
    for depth in range(1, 8):  # A/A, A/A/A, ... deeper than any ArcGIS Server nests
        answers[f"{ROOT}/" + "/".join(["A"] * (depth + 1))] = {"folders": ["/".join(["A"] * (depth + 2))]}
    for cap in (50, 3):
        resources, _, asked = detect(answers, ROOT, Settings(arcgis_max_folders=cap))
        directory, top = resources
        assert [d.name for d in directory.datasets] == ["Top/MapServer"] and top.type == "ARCGIS-MAPSERVER"
        folders = [url.removeprefix(ROOT + "/") for url in asked if "Top" not in url]
        assert len(folders) == len(set(folders)) <= cap, folders
        assert max(url.count("/") for url in folders) == (2 if cap == 50 else 1), folders  # A/A/A at most


def test_a_directory_of_thousands_of_services_describes_only_the_capped_number(caplog):
    services = [{"name": f"S{i}", "type": "GPServer"} for i in range(5000)]
    services.append({"name": "Last", "type": "MapServer"})
    with caplog.at_level(logging.INFO, logger="geoweb.detect.arcgis"):
        resources, _, asked = detect({ROOT: {"currentVersion": 11.3, "services": services}}, ROOT)
    (directory,) = resources
    assert len(directory.datasets) == Settings().arcgis_max_services
    assert asked == []  # the page was the JSON; geoprocessing services are listed, never fetched
    assert "5001 services, only the first 100 described" in caplog.text


def test_a_service_of_thousands_of_layers_keeps_the_capped_number(caplog):
    layers = {"layers": [{"id": i, "name": f"L{i}"} for i in range(3000)], "tables": "not a list"}
    with caplog.at_level(logging.INFO, logger="geoweb.detect.arcgis"):
        (resource,), _, _ = detect(
            {MAP: MAP_DOC, f"{MAP}/layers": layers}, MAP, Settings(arcgis_max_layers=50)
        )
    assert len(resource.datasets) == 50
    assert "3000 layers and tables, only the first 50 kept" in caplog.text


def test_hostile_layers_and_extents_lose_their_boxes_not_the_service():
    bad_extents = [
        {"xmin": 1e308, "ymin": -1e308, "xmax": 1e308, "ymax": 1e308, "spatialReference": {"wkid": 102100}},
        {"xmin": 10, "ymin": 80, "xmax": 20, "ymax": 95, "spatialReference": {"wkid": 4326}},
        {"xmin": 1, "ymin": 2, "xmax": 3, "ymax": 4, "spatialReference": {"wkt": "P" * 100_000}},
        {"xmin": 1, "ymin": 2, "xmax": 3, "ymax": 4, "spatialReference": {"wkid": "4326"}},
        {"xmin": True, "ymin": 2, "xmax": 3, "ymax": 4},
        [1, 2, 3, 4],
    ]
    layers = {
        "layers": [{"id": i, "name": f"L{i}", "extent": extent} for i, extent in enumerate(bad_extents)]
        + [None, 7, "x", {"id": "nine"}, {"name": {"nested": True}, "id": 1.5}],
        "tables": [{"id": 99, "name": "T"}],
    }
    document = {**MAP_DOC, "fullExtent": bad_extents[0], "initialExtent": bad_extents[1]}
    document |= {"documentInfo": "not an object", "copyrightText": 42}
    (resource,), _, _ = detect({MAP: document, f"{MAP}/layers": layers}, MAP)
    assert [d.name for d in resource.datasets] == [f"L{i}" for i in range(len(bad_extents))]
    assert all(d.bbox is None for d in resource.datasets) and resource.bbox is None
    assert resource.keywords == [] and resource.provider is None and resource.title == "Rivers"


def test_a_lying_content_type_does_not_hide_a_service():
    answers = {MAP: MAP_DOC, f"{MAP}/layers": LAYERS_DOC}

    async def go():
        async with serving(server(answers, content_type="text/html")) as run:
            return await run.detect(MAP)

    (resource,) = asyncio.run(go())
    assert [d.name for d in resource.datasets] == ["Gauges", "Rivers", "Catchments"]


def test_a_broken_layers_answer_leaves_the_layer_names_without_extents(caplog):
    for layers in ({"error": {"code": 500, "message": "Internal"}}, b"<html>oops</html>", (404, b"gone")):
        (resource,), stats, _ = detect({MAP: MAP_DOC, f"{MAP}/layers": layers}, MAP)
        assert [d.name for d in resource.datasets] == ["Gauges", "Rivers", "Catchments"]
        assert resource.extra["layer_extents"] is False
        assert sum(n for key, n in stats.items() if key.startswith("arcgis/layers_miss/")) == 1


def test_broken_folders_and_services_of_a_directory_cost_only_themselves(caplog):
    answers = {
        ROOT: {"currentVersion": 10.91, "folders": ["Locked", "Broken", "Gone"], "services": [
            {"name": "Rivers", "type": "MapServer"}, {"name": "Secret", "type": "FeatureServer"},
            {"name": "Liar", "type": "ImageServer"}]},
        f"{ROOT}/Locked": {"error": {"code": 499, "message": "Token Required"}},
        f"{ROOT}/Broken": b"{\"folders\": [",
        f"{ROOT}/Rivers/MapServer": MAP_DOC,
        f"{ROOT}/Rivers/MapServer/layers": LAYERS_DOC,
        f"{ROOT}/Secret/FeatureServer": {"error": {"code": 499, "message": "Token Required"}},
        f"{ROOT}/Liar/ImageServer": MAP_DOC,  # a map service's JSON where an image service should be
    }  # fmt: skip
    resources, stats, _ = detect(answers, ROOT)
    directory, rivers = resources
    assert rivers.url.endswith("/Rivers/MapServer") and len(rivers.datasets) == 3
    assert [(d.name, d.extra.get("error")) for d in directory.datasets] == [
        ("Rivers/MapServer", None), ("Secret/FeatureServer", "token_required"), ("Liar/ImageServer", "not_arcgis"),
    ]  # fmt: skip
    assert stats["arcgis/folder_miss/token_required"] == stats["arcgis/folder_miss/not_arcgis"] == 1
    assert stats["arcgis/folder_miss/http_status"] == 1


def test_a_hostile_service_costs_nothing_else_of_the_run():
    """One hostile service among good ones: the good ones are still found with the same context."""
    answers = {
        f"{ROOT}/Bad/MapServer": b'{"layers": ' + b"[" * 50_000,
        MAP: MAP_DOC,
        f"{MAP}/layers": LAYERS_DOC,
    }

    async def go():
        async with serving(server(answers)) as run:
            ctx = run.context()
            bad = await run.detect(f"{ROOT}/Bad/MapServer/0", ctx)
            good = await run.detect(f"{MAP}/2/query?where=1%3D1", ctx)
            return bad, good, ctx.stats

    bad, (good,), stats = asyncio.run(go())
    assert bad == [] and stats["arcgis/miss/unsafe_content"] == 1
    assert good.url.endswith(MAP) and len(good.datasets) == 3


def test_json_with_current_version_outside_rest_services_is_a_miss(caplog):
    answers = {
        "/config/app.json": {"currentVersion": 10.81, "services": [{"name": "X", "type": "MapServer"}]}
    }
    message = miss(answers, "/config/app.json", "not_arcgis", caplog)
    assert "no <instance>/rest/services path" in message


def test_other_service_types_are_not_resources(caplog):
    message = miss({}, f"{ROOT}/Tools/GPServer/Buffer", "not_arcgis", caplog)
    assert "GPServer" in message


def test_accepts_is_cheap_and_by_url_or_first_bytes():
    detector = ArcGISDetector()
    from tests.data.files.make_fixtures import response

    assert detector.accepts(response("http://h/arcgis/rest/services/X/MapServer"))
    assert detector.accepts(response("http://h/a.json", b'{"currentVersion": 10.91}'))
    assert not detector.accepts(response("http://h/page.html", b"<html>rest/services currentVersion</html>"))
    assert not detector.accepts(response("http://h/a.json", b'{"type": "FeatureCollection"}'))


def test_a_server_answering_every_path_with_its_root_costs_a_bounded_walk():
    """An echo server: every folder lists the same folder again, every service is the directory again."""
    root = {"currentVersion": 10.91, "folders": ["F"], "services": [{"name": "X", "type": "MapServer"}]}

    async def echo(request: web.Request) -> web.Response:
        return web.json_response(root)

    app = web.Application()
    app.router.add_get("/{tail:.*}", echo)

    async def go():
        async with serving(app) as run:
            ctx = run.context()
            return await run.detect(f"{ROOT}/F/F/X/MapServer/7", ctx), await run.detect(ROOT, ctx), run.asked

    service, (directory,), asked = asyncio.run(go())
    assert service == []  # the service's JSON is a directory's: no layers list
    assert [(d.name, d.extra["error"]) for d in directory.datasets] == [
        ("X/MapServer", "not_arcgis"),
        ("F/X/MapServer", "not_arcgis"),
        ("F/F/X/MapServer", "not_arcgis"),  # claimed before, still fetched for its dataset
        ("F/F/F/X/MapServer", "not_arcgis"),
    ]
    folders = ["F", "F/F", "F/F/F"]  # no deeper
    services = ["X", "F/X", "F/F/X", "F/F/F/X"]
    expected = ["F/F/X/MapServer", *folders, *(f"{name}/MapServer" for name in services)]
    assert asked == [f"{ROOT}/{path}?f=json" for path in expected]
