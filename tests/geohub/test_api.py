"""The GeoHub plugin served by a real Airflow API server, searching a real PostGIS database: Airflow's login
in front of every route, the search and detail API, hostile input, and the page's files and headers."""

from __future__ import annotations

from urllib.parse import quote

import psycopg2
import pytest

from tests.geohub import data

ROUTES = ["/geohub/", "/geohub/static/geohub.js", "/geohub/openapi.json", "/geohub/api/search",
          "/geohub/api/resources/1",
          "/geohub/api/resources/1/checks", "/geohub/api/runs", "/geohub/api/types", "/geohub/api/concepts"]  # fmt: skip


def search(get, **params) -> dict:
    response = get("/api/search", **params)
    assert response.status_code == 200, response.text
    return response.json()


def titles(page: dict) -> list[str]:
    return [hit["title"] for hit in page["results"]]


# --- Airflow's login in front of every route ---


@pytest.mark.parametrize("path", ROUTES)
def test_anonymous_requests_are_refused(geohub_server, path):
    response = geohub_server.session().get(
        f"{geohub_server.base_url}{path}", allow_redirects=False, timeout=30
    )
    if path == "/geohub/":  # a browser is sent to Airflow's login page, to come back after it
        assert response.status_code == 303
        assert "/auth/login" in response.headers["location"]
        assert "next=%2Fgeohub%2F" in response.headers["location"]
    else:
        assert response.status_code == 401
        assert "pwned" not in response.text


@pytest.mark.parametrize("path", ROUTES[1:])
def test_a_forged_token_is_refused(geohub_server, path):
    forged = "eyJhbGciOiJIUzUxMiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl"
    response = geohub_server.session(forged).get(f"{geohub_server.base_url}{path}", timeout=30)
    assert response.status_code == 403


def test_the_ui_session_cookie_is_a_login(geohub_server, token):
    session = geohub_server.session()
    session.cookies.set("_token", token)
    response = session.get(f"{geohub_server.base_url}/geohub/api/types", timeout=30)
    assert response.status_code == 200
    assert {"type": "WMS", "resources": sum(r.type == "WMS" for r in data.ALL)} in response.json()


def test_the_plugin_adds_a_link_to_the_ui_navigation(geohub_server, token):
    plugins = geohub_server.session(token).get(f"{geohub_server.base_url}/api/v2/plugins", timeout=30).json()
    (geohub,) = [p for p in plugins["plugins"] if p["name"] == "geohub"]
    assert [(a["url_prefix"], a["name"]) for a in geohub["fastapi_apps"]] == [("/geohub", "GeoHub")]
    nav, report = geohub["external_views"]
    assert nav["href"] == "geohub/" and nav["url_route"] == "geohub" and nav["nav_top_level"]
    # a tab on every DAG run's page, filled in by the UI with the run's DAG and id
    assert report["destination"] == "dag_run" and report["href"] == "geohub/runs/{DAG_ID}/{RUN_ID}"


# --- a run's report tab ---


def test_a_crawl_run_report_gives_its_status_and_resources(geohub_server, token):
    session = geohub_server.session(token)
    answer = session.get(f"{geohub_server.base_url}/geohub/api/runs/geoweb_crawl/{data.RUN_1}", timeout=30)
    assert answer.status_code == 200
    report = answer.json()
    assert report["crawl"]["run_id"] == data.RUN_1 and report["crawl"]["status"] == "success"
    assert report["crawl"]["resources"] == 2 and report["crawl"]["has_plot"] is False
    page = session.get(f"{geohub_server.base_url}/geohub/runs/geoweb_crawl/{data.RUN_1}", timeout=30)
    assert page.headers["content-type"].startswith("text/html")
    assert "The run's figures are stored when it finishes" in page.text  # its summary has no levels
    plot = session.get(
        f"{geohub_server.base_url}/geohub/runs/plot.png", params={"run": data.RUN_1}, timeout=30
    )
    assert plot.status_code == 404


def test_the_report_page_shows_ids_as_text_and_knows_other_dags(geohub_server, token):
    session = geohub_server.session(token)
    hostile = '<img src=x onerror="alert(1)">'
    page = session.get(
        f"{geohub_server.base_url}/geohub/runs/geoweb_crawl/{quote(hostile, safe='')}", timeout=30
    )
    assert page.status_code == 200
    assert hostile not in page.text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page.text
    assert "No crawl was run" in page.text
    other = session.get(f"{geohub_server.base_url}/geohub/runs/example_dag/manual__1", timeout=30)
    assert "not one of GeoWeb Harvester's" in other.text


def test_the_report_page_wants_a_login(geohub_server):
    page = geohub_server.session().get(
        f"{geohub_server.base_url}/geohub/runs/geoweb_crawl/{data.RUN_1}", allow_redirects=False, timeout=30
    )
    assert page.status_code == 303 and "/auth/login" in page.headers["location"]


# --- search and detail ---


def test_a_text_search_ranks_and_describes_its_results(get):
    page = search(get, q="rivers")
    assert titles(page)[0] == "Rivers and lakes of Taiwan"
    hit = page["results"][0]
    assert hit["type"] == "WMS" and hit["datasets"] == 2 and hit["provider"] == "Water Agency"
    assert hit["capabilities_url"] == f"{data.RIVERS.url}&service=WMS&request=GetCapabilities"
    assert hit["footprint"]["type"] == "Polygon"
    assert hit["keyword"] == "hydrography" and hit["source_page"] == f"{data.PORTAL}/catalogue.html"
    assert page["next_offset"] is None


def test_filters_combine(get):
    in_switzerland = ",".join(map(str, data.SWITZERLAND))
    page = search(
        get, q="survey", type=["WMS", "WFS"], bbox=in_switzerland, run=data.RUN_2, level=1, limit=10
    )
    assert len(page["results"]) == 10 and page["next_offset"] == 10
    assert all(t.startswith("Alpine lake survey") for t in titles(page))
    assert search(get, q="survey", type="WFS")["results"] == []
    assert search(get, q="survey", run=data.RUN_1)["results"] == []


def test_the_answer_counts_its_matches_and_what_the_box_left_out(get):
    page = search(get, q="water", bbox=",".join(map(str, data.SWITZERLAND)), limit=2)
    assert len(page["results"]) == 2 and page["total"] > 2
    assert page["outside_box"] >= 1  # the rivers of Taiwan
    assert page["no_footprint"] == 0
    facets = page["facets"]
    assert page["facets_estimated"] is False  # counted exactly: few matches
    assert sum(f["resources"] for f in facets["type"]) == page["total"]
    assert {"value": data.AUTHORITY, "resources": 2} in facets["provider"]
    assert {c["id"] for c in facets["concept"]} >= {"hydrography", "river", "lake"}
    assert facets["level"] == [{"level": 1, "resources": page["total"]}]
    assert facets["status"] == [{"value": "ok", "resources": page["total"]}]
    unplaced = search(get, q="stations", footprint="none")
    assert titles(unplaced) == [data.STATIONS.title] and unplaced["total"] == 1


def test_a_provider_facet_is_a_filter(get):
    page = search(get, provider=data.AUTHORITY)
    assert sorted(titles(page)) == sorted([data.DIKES.title, data.GAUGES.title]) and page["total"] == 2


def test_pages_follow_each_other(get):
    pages = [search(get, q="alpine lake", limit=10, offset=offset) for offset in (0, 10, 20)]
    assert [p["next_offset"] for p in pages] == [10, 20, None]
    seen = [t for p in pages for t in titles(p)]
    assert sorted(seen) == sorted(r.title for r in data.ALPINE)


def test_the_detail_lists_datasets_footprints_and_runs(get, geohub_dsn):
    response = get(f"/api/resources/{data.resource_id(geohub_dsn, data.RIVERS)}")
    assert response.status_code == 200
    detail = response.json()
    assert detail["title"] == data.RIVERS.title and detail["abstract"] == data.RIVERS.abstract
    assert [(d["name"], d["footprint"]["type"], d["concepts"]) for d in detail["datasets"]] == [
        ("rivers", "Polygon", ["river"]), ("reservoirs", "Polygon", ["reservoir"]),
    ]  # fmt: skip
    assert detail["datasets_total"] == 2
    assert sorted(r["run_id"] for r in detail["runs"]) == [data.RUN_1, data.RUN_2]


def test_an_unknown_resource_is_404(get):
    assert get("/api/resources/999999").status_code == 404
    assert get(f"/api/resources/{2**63}").status_code == 422  # past bigint: refused before the database
    assert get("/api/resources/abc").status_code == 422


def test_runs_and_types_to_filter_by(get):
    runs = get("/api/runs").json()
    assert [(r["run_id"], r["resources"]) for r in runs] == [(data.RUN_2, len(data.ALL)), (data.RUN_1, 2)]
    types = {t["type"]: t["resources"] for t in get("/api/types").json()}
    assert types == {"KML": 2, "SHAPEFILE": 2, "SOS": 1, "WCS": 1, "WFS": 2, "WMS": 33, "WMTS": 1}


def test_concepts_to_filter_by_count_what_is_below_them(get):
    concepts = {c["id"]: (c["label"], c["resources"]) for c in get("/api/concepts").json()}
    assert concepts["water_body"] == ("water body", 27)  # the rivers WMS, the 25 alpine lakes, the Valais map
    assert concepts["lake"] == ("lake", 25) and concepts["river"] == ("river", 2)
    assert concepts["cadastre"] == ("cadastre", 1)
    assert concepts["monitoring_station"] == ("monitoring station", 2)  # the stations and the gauges
    assert "building" not in concepts  # no dataset is about it


def test_the_concept_filter_finds_narrower_concepts(get):
    assert set(titles(search(get, concept="watercourse"))) == {data.RIVERS.title, data.VALAIS.title}
    page = search(get, concept="water_body", q="taiwan")
    assert titles(page) == [data.RIVERS.title]
    assert page["results"][0]["concepts"] == ["reservoir", "river"]  # its datasets' concepts, once each
    assert len(search(get, concept="hydrography", limit=100)["results"]) == 29  # and the dikes and gauges


def test_resources_found_dead_are_marked_and_can_be_left_out(get, geohub_dsn):
    """A resource the revisits found dead keeps its place in the results, marked; ``answering`` drops it."""
    with psycopg2.connect(geohub_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE resources SET last_status = 'dead' WHERE url = %s AND type = %s", data.PARCELS.key
        )
    try:
        assert [(h["title"], h["status"]) for h in search(get, q="parcels")["results"]] == [
            (data.PARCELS.title, "dead")
        ]
        assert search(get, q="parcels", answering="true")["results"] == []
        assert titles(search(get, q="taiwan", answering="true")) == [data.RIVERS.title]  # the others stay
    finally:
        with psycopg2.connect(geohub_dsn) as conn, conn.cursor() as cur:
            cur.execute(
                "UPDATE resources SET last_status = 'ok' WHERE url = %s AND type = %s", data.PARCELS.key
            )


# --- conformance ---


def conformance_facet(page: dict) -> list[tuple[str, int]]:
    return [(f["value"], f["resources"]) for f in page["facets"]["conformance"]]


def test_the_conformance_facet_counts_the_judged_services_and_filters_them(get):
    everything = search(get)
    assert conformance_facet(everything) == [("conformant", 1), ("readable", 1), ("identified", 1)]
    page = search(get, conformance=["readable", "conformant"])
    assert sorted(titles(page)) == sorted([data.CONFORMANT_SURVEY.title, data.READABLE_SURVEY.title])
    assert page["total"] == 2 and conformance_facet(page) == [("conformant", 1), ("readable", 1)]
    (tiles,) = search(get, conformance="identified")["results"]
    assert (tiles["url"], tiles["conformance"], tiles["defects"]) == (
        data.TILES.url, "identified", data.TILES.defects,
    )  # fmt: skip
    # with text, and with the other filters
    assert titles(search(get, q="survey", conformance="readable")) == [data.READABLE_SURVEY.title]
    assert conformance_facet(search(get, q="survey")) == [("conformant", 1), ("readable", 1)]
    assert search(get, q="survey", conformance="identified")["results"] == []
    assert search(get, type="WFS", conformance="conformant")["total"] == 0


def test_equal_ranks_put_conformant_services_above_readable_ones(get):
    """The surveys' words rank alike: newest first, but for the readable one, newer than the conformant one,
    which goes last."""
    page = search(get, q="alpine lake survey", limit=100)
    assert len({hit["rank"] for hit in page["results"]}) == 1
    by_title = {hit["title"]: hit["id"] for hit in page["results"]}
    readable, conformant = by_title[data.READABLE_SURVEY.title], by_title[data.CONFORMANT_SURVEY.title]
    assert readable > conformant  # newest first alone would put it first
    expected = sorted(by_title.values(), key=lambda i: (i == readable, -i))
    assert [hit["id"] for hit in page["results"]] == expected
    judged = search(get, q="alpine lake survey", conformance=["conformant", "readable"])
    assert titles(judged) == [data.CONFORMANT_SURVEY.title, data.READABLE_SURVEY.title]
    assert [(h["conformance"], h["defects"]) for h in judged["results"]] == [
        ("conformant", []), ("readable", data.SURVEY_DEFECTS),
    ]  # fmt: skip
    without_text = search(get, conformance=["conformant", "readable"])  # newest first: no rank to break
    assert titles(without_text) == [data.READABLE_SURVEY.title, data.CONFORMANT_SURVEY.title]


def test_the_detail_gives_the_level_the_defects_and_owslib_s_reason(get, geohub_dsn):
    readable = get(f"/api/resources/{data.resource_id(geohub_dsn, data.READABLE_SURVEY)}").json()
    assert (readable["conformance"], readable["defects"], readable["owslib_error"]) == (
        "readable", data.SURVEY_DEFECTS, data.SURVEY_OWSLIB_ERROR,
    )  # fmt: skip
    conformant = get(f"/api/resources/{data.resource_id(geohub_dsn, data.CONFORMANT_SURVEY)}").json()
    assert (conformant["conformance"], conformant["defects"], conformant["owslib_error"]) == (
        "conformant",
        [],
        None,
    )
    file = get(f"/api/resources/{data.resource_id(geohub_dsn, data.HUTS)}").json()
    assert (file["conformance"], file["defects"], file["owslib_error"]) == (
        None,
        [],
        None,
    )  # nothing judges it


# --- quality ---


def test_each_result_carries_its_quality_and_equal_ranks_put_the_reliable_one_first(get):
    """The flaky harbour service is the newer: newest first alone would put it first."""
    page = search(get, q="harbour soundings")
    assert [hit["url"] for hit in page["results"]] == [data.STEADY.url, data.FLAKY.url]
    assert page["results"][0]["rank"] == page["results"][1]["rank"]
    steady, flaky = (hit["quality"] for hit in page["results"])
    assert steady == {
        "checks_30d": 54, "availability_30d_percent": 100.0, "response_median_seconds": 0.39,
        "inspire_availability": "met", "inspire_getmap": "met", "inspire": "met",
    }  # fmt: skip
    assert (flaky["checks_30d"], flaky["availability_30d_percent"], flaky["inspire"]) == (
        30,
        66.67,
        "not met",
    )
    assert search(get, q="parcels")["results"][0]["quality"]["checks_30d"] == 0  # never checked


def test_availability_and_inspire_filter_and_inspire_is_a_facet(get):
    assert [h["url"] for h in search(get, min_availability=99.5)["results"]] == [data.STEADY.url]
    assert {h["url"] for h in search(get, q="harbour", min_availability=60)["results"]} == {
        data.STEADY.url, data.FLAKY.url,
    }  # fmt: skip
    assert [h["url"] for h in search(get, inspire="met")["results"]] == [data.STEADY.url]
    assert [h["url"] for h in search(get, inspire=["not met", "met"])["results"]] == [
        data.FLAKY.url,
        data.STEADY.url,
    ]
    facet = search(get, q="harbour")["facets"]["inspire"]
    assert facet == [{"value": "met", "resources": 1}, {"value": "not met", "resources": 1}]


def test_the_detail_names_the_rules_and_the_checks_come_in_time_order(get, geohub_dsn):
    steady = data.resource_id(geohub_dsn, data.STEADY)
    quality = get(f"/api/resources/{steady}").json()["quality"]
    assert (quality["checks_30d"], quality["availability_30d_percent"]) == (54, 100)
    assert (quality["inspire_availability"], quality["inspire_getmap"]) == ("met", "met")
    assert "at least 99 %" in quality["inspire_availability_rule"]
    assert "within 5 s" in quality["inspire_getmap_rule"]
    response = get(f"/api/resources/{steady}/checks")
    assert response.status_code == 200
    checks = response.json()
    assert [(c["operation"], c["total_seconds"], c["outcome"]) for c in checks] == [
        (operation, seconds, outcome) for outcome, operation, seconds in data.STEADY_CHECKS
    ]
    assert [c["checked_at"] for c in checks] == sorted(c["checked_at"] for c in checks)
    assert get("/api/resources/999999999/checks").status_code == 404
    assert get("/api/resources/0/checks").status_code == 422


# --- hostile input ---


def test_hostile_titles_come_back_as_data_never_as_markup(get, geohub_dsn):
    response = get("/api/search", q="flood zones")
    assert response.headers["content-type"] == "application/json"
    (hit,) = response.json()["results"]
    assert (
        hit["title"] == data.HOSTILE_TITLE
    )  # as the server sent it: escaping is the page's job (textContent)
    assert hit["capabilities_url"] is None  # a javascript: URL is never offered as a link
    detail = get(f"/api/resources/{hit['id']}").json()
    assert detail["abstract"] == data.HOSTILE_ABSTRACT and detail["datasets"][0]["name"] == data.SCRIPT


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"bbox": "1,2,3"}, "bbox"),
        ({"bbox": "a,b,c,d"}, "bbox"),
        ({"bbox": "nan,0,1,1"}, "finite"),
        ({"bbox": "0,10,1,5"}, "latitudes"),
        ({"bbox": "0,0,200,1"}, "longitudes"),
        ({"q": "river\x00"}, "NUL"),
        ({"q": "x" * 501}, "500"),
        ({"run": "r\x00"}, "NUL"),
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": 10_001}, "offset"),
        ({"level": -1}, "level"),
        ({"type": ["T"] * 21}, "20 types"),
        ({"concept": "no_such_concept"}, "no concept"),
        ({"concept": "x" * 251}, "concept"),
        ({"type": "WMX"}, "no type WMX"),
        ({"footprint": "some"}, "footprint"),
        ({"footprint": "none", "bbox": "0,0,1,1"}, "bbox"),
        ({"provider": "p\x00"}, "NUL"),
        ({"answering": "maybe"}, "answering"),
        ({"conformance": "sloppy"}, "no level sloppy"),
        ({"conformance": "x" * 251}, "conformance"),
        ({"min_availability": 100.5}, "min_availability"),
        ({"min_availability": "high"}, "min_availability"),
        ({"inspire": "maybe"}, "no verdict maybe"),
    ],
)
def test_bad_parameters_are_refused_with_the_reason(get, params, message):
    response = get("/api/search", **params)
    assert response.status_code == 422
    assert message in response.text


@pytest.mark.parametrize(
    "text", ["'; DROP TABLE resources; --", '"unclosed', "a & | ! <-> :*", "(((", "🌊 河川", "-", "x" * 500]
)
def test_any_text_is_a_search_never_an_error(get, text):
    assert "results" in search(get, q=text)


def test_sql_in_the_search_text_is_only_text(get):
    search(get, q="x'); DELETE FROM resources; --")
    assert len(search(get, limit=100)["results"]) == len(data.ALL)


# --- the page, its files and headers ---


def test_every_response_carries_a_strict_content_security_policy(get):
    for path in ("/", "/static/geohub.js", "/api/search"):
        headers = get(path).headers
        policy = headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        ("/", "text/html"),
        ("/static/geohub.js", "text/javascript"),
        ("/static/geohub.css", "text/css"),
        ("/static/leaflet/leaflet.js", "text/javascript"),
        ("/static/leaflet/leaflet.css", "text/css"),
        ("/static/leaflet/images/layers.png", "image/png"),
        ("/static/world.geojson", "application/geo+json"),
    ],
)
def test_the_page_and_its_files_are_served(get, path, media_type):
    response = get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(media_type)


@pytest.mark.parametrize(
    "path",
    ["/static/../app.py", "/static/%2e%2e/app.py", "/static/leaflet/LICENSE", "/static/", "/static/nope.js"],
)
def test_nothing_else_is_served(get, path):
    assert get(path).status_code == 404


def test_the_page_loads_scripts_from_geohub_only(get):
    html = get("/").text
    assert "<script>" not in html and "http" not in html.replace("http-equiv", "")


def test_the_search_is_documented_in_openapi(get):
    spec = get("/openapi.json").json()
    search_op = spec["paths"]["/api/search"]["get"]
    assert {p["name"] for p in search_op["parameters"]} == {
        "q",
        "type",
        "bbox",
        "run",
        "level",
        "limit",
        "offset",
        "concept",
        "answering",
        "provider",
        "footprint",
        "conformance",
        "min_availability",
        "inspire",
    }
    assert {"/api/resources/{resource_id}", "/api/resources/{resource_id}/checks"} <= set(spec["paths"])
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    page = spec["components"]["schemas"]["SearchPage"]
    assert page["properties"]["facets_estimated"]["type"] == "boolean"
    assert {"total", "outside_box", "no_footprint", "facets", "facets_estimated"} <= set(page["required"])
