"""The satellite-image archive adapters (STAC, NSPO) against stand-ins that speak each API's format, and their
harvest into PostGIS: paging edges, empty archives, malformed answers, an archive failing half-way, the
watermark, idempotent loads, and a mapping changed without code."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from importlib.resources import files

import pytest

from geoweb.connectors import ConfigError, ConnectorError, load_connector
from geoweb.harvest.archive import harvest_archive
from geoweb.models import Scene
from geoweb.store import Store
from tests.standins.archive import TAIPEI, NSPOStandin, STACStandin, make_scenes

ADAPTERS = {"stac": STACStandin, "nspo": NSPOStandin}


@pytest.fixture
def store(postgis_dsn):
    with Store(postgis_dsn) as opened:
        yield opened


def adapter(name: str, standin, **settings):
    return load_connector(name, {"url": standin.url, "page_size": 10, "retries": 0, **settings})


def stored(store: Store, source: str) -> dict[str, tuple]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute(
            "SELECT scene_id, satellite, sensor, acquired_at, ST_AsText(footprint), cloud_cover, quicklook_url "
            "FROM archive_scenes WHERE source = %s",
            (source,),
        )
        return {row[0]: row[1:] for row in cur.fetchall()}


def state(store: Store, source: str):
    return store.catalogue.source_state(source)


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_scene_is_read_with_its_fields_page_by_page(name):
    truth = make_scenes(25)
    with ADAPTERS[name](truth) as standin:
        pages = list(adapter(name, standin).pages())
    assert [len(p) for p in pages] == [10, 10, 5]
    scenes = {s.identifier: s for page in pages for s in page}
    assert set(scenes) == {t.scene_id for t in truth}
    for t in truth:
        scene = scenes[t.scene_id]
        assert scene.acquired_at == t.acquired_at
        assert scene.satellite.upper() == t.satellite and scene.sensor.upper() == t.sensor
        assert scene.cloud_cover == t.cloud_cover
        assert scene.quicklook_url == standin.quicklook(t)
        assert scene.bbox == pytest.approx(t.bbox)
        assert scene.footprint["type"] == "Polygon"


def test_stac_search_asks_with_the_item_search_parameters():
    truth = make_scenes(30) + [
        replace(s, scene_id=f"S2_{i}", collection="sentinel-2") for i, s in enumerate(make_scenes(3))
    ]
    since = datetime(2024, 1, 1, 20, tzinfo=UTC)
    box = (119.0, 22.0, 119.9, 23.0)
    with STACStandin(truth) as standin:
        scenes = list(adapter("stac", standin, collections="formosat-5").records(since=since, bbox=box))
        first = standin.requests[0].query
    assert first == {"limit": "10", "datetime": "2024-01-01T20:00:00Z/..", "bbox": "119,22,119.9,23",
                     "collections": "formosat-5"}  # fmt: skip
    expected = {
        t.scene_id for t in truth
        if t.collection == "formosat-5" and t.acquired_at >= since
        and t.bbox[0] <= box[2] and box[0] <= t.bbox[2] and t.bbox[1] <= box[3] and box[1] <= t.bbox[3]
    }  # fmt: skip
    assert expected and {s.identifier for s in scenes} == expected


def test_nspo_asks_in_its_own_time_zone_and_stops_at_the_total():
    since = datetime(2024, 1, 1, 20, tzinfo=UTC)
    with NSPOStandin(make_scenes(40)) as standin:
        scenes = list(adapter("nspo", standin).records(since=since))
        asked = [seen.query for seen in standin.requests]
    assert asked[0]["startTime"] == "2024-01-02 04:00:00"  # Taipei time
    # 22 scenes from 20:00 UTC: three pages, the last short
    assert len(scenes) == 22 and [q["pageNo"] for q in asked] == ["1", "2", "3"]


@pytest.mark.parametrize("with_total", [True, False])
def test_nspo_exact_multiple_of_the_page_size(with_total):
    mapping = json.loads((files("geoweb.connectors.archive") / "nspo.json").read_text())
    if not with_total:
        del mapping["response"]["total"]
    with NSPOStandin(make_scenes(20)) as standin:
        scenes = list(adapter("nspo", standin, mapping=mapping).records())
        pages_asked = len(standin.requests)
    assert len(scenes) == 20
    # the total ends paging on a full page; without it, an empty third page does
    assert pages_asked == (2 if with_total else 3)


def test_stac_exact_multiple_has_no_next_link():
    with STACStandin(make_scenes(20)) as standin:
        pages = list(adapter("stac", standin).pages())
        assert len(standin.requests) == 2
    assert [len(p) for p in pages] == [10, 10]


@pytest.mark.parametrize("name", ADAPTERS)
def test_an_empty_archive_loads_nothing_and_succeeds(name, store):
    with ADAPTERS[name]([]) as standin:
        source = adapter(name, standin).source
        counts = harvest_archive(store, adapter(name, standin))
    assert counts["pages"] == 1 and counts["new"] == 0 and counts["watermark"] is None
    assert state(store, source).last_status == "success" and state(store, source).watermark is None
    assert stored(store, source) == {}


@pytest.mark.parametrize("name", ADAPTERS)
def test_harvest_is_incremental_from_the_watermark_and_idempotent(name, store):
    truth = make_scenes(25)
    with ADAPTERS[name](truth) as standin:
        source = adapter(name, standin).source
        first = harvest_archive(store, adapter(name, standin))
        newest = max(t.acquired_at for t in truth)
        assert first["new"] == 25 and state(store, source).watermark == newest
        rows = stored(store, source)
        sample = truth[7]
        satellite, sensor, acquired, footprint, cloud, quicklook = rows[sample.scene_id]
        assert (satellite.upper(), sensor.upper(), acquired, cloud, quicklook) == (
            sample.satellite, sample.sensor, sample.acquired_at, sample.cloud_cover, standin.quicklook(sample)
        )  # fmt: skip
        assert footprint.startswith("POLYGON")

        truth.extend(make_scenes(5, newest + timedelta(hours=1), prefix="FS2"))
        standin.requests.clear()
        second = harvest_archive(store, adapter(name, standin))
        # only what is new since the watermark is asked for; the scene at the watermark comes again, unchanged
        assert second["new"] == 5 and second["updated"] == 1 and second["pages"] == 1
        assert len(stored(store, source)) == 30
        assert state(store, source).watermark == max(t.acquired_at for t in truth)

        third = harvest_archive(store, adapter(name, standin))
    assert third["new"] == 0 and len(stored(store, source)) == 30


@pytest.mark.parametrize("name", ADAPTERS)
def test_an_archive_failing_half_way_keeps_earlier_pages_and_the_watermark(name, store):
    with ADAPTERS[name](make_scenes(25)) as standin:
        source = adapter(name, standin).source
        standin.fail(page=3, kind="server")
        with pytest.raises(ConnectorError, match="page 3") as failure:
            harvest_archive(store, adapter(name, standin))
        assert "HTTP 500" in str(failure.value)
        after = state(store, source)
        assert after.last_status == "failed" and "page 3" in after.last_error and after.watermark is None
        assert len(stored(store, source)) == 20  # pages 1 and 2 were committed

        standin.reset()
        counts = harvest_archive(store, adapter(name, standin))
    assert counts["new"] == 5 and counts["updated"] == 20
    assert len(stored(store, source)) == 25 and state(store, source).last_status == "success"


@pytest.mark.parametrize("name", ADAPTERS)
def test_malformed_json_fails_with_the_page_named(name, store):
    with ADAPTERS[name](make_scenes(25)) as standin:
        source = adapter(name, standin).source
        standin.fail(page=2, kind="malformed")
        with pytest.raises(ConnectorError, match="page 2: the answer is not JSON"):
            harvest_archive(store, adapter(name, standin))
    assert len(stored(store, source)) == 10 and state(store, source).last_status == "failed"


def test_stac_answer_that_is_not_a_feature_collection_is_refused():
    with STACStandin(make_scenes(3)) as standin, pytest.raises(ConnectorError, match="FeatureCollection"):
        stac = adapter("stac", standin)
        stac.read_page({"features": []}, "page 1", stac.first_request(None, None))


def test_stac_post_paging_is_refused_clearly():
    with STACStandin(make_scenes(25)) as standin:
        standin.next_method = "POST"
        with pytest.raises(ConnectorError, match="page 1: the next page is a POST request"):
            list(adapter("stac", standin).records())


def test_nspo_refusal_in_a_200_answer_carries_the_archive_message():
    with (
        NSPOStandin(make_scenes(5)) as standin,
        pytest.raises(ConnectorError, match=r"code 1002: 'pageSize must"),
    ):
        list(adapter("nspo", standin, page_size=1000).records())


def test_the_archive_key_never_appears_in_errors_or_logs(caplog):
    key = "s3cr3t-archive-key"
    with NSPOStandin(make_scenes(5)) as standin:
        standin.api_key = "another-key"
        with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError) as failure:
            list(adapter("nspo", standin, key=key).records())
    assert "HTTP 401" in str(failure.value)
    assert key not in str(failure.value) and key not in caplog.text


def test_nspo_reconfigured_by_a_mapping_file_without_code(tmp_path):
    """The archive moved its endpoint and renamed fields; a mapping file follows it."""
    mapping = json.loads((files("geoweb.connectors.archive") / "nspo.json").read_text())
    mapping["request"]["path"] = "/query/v2"
    mapping["fields"]["cloud_cover"] = {"path": "cloud", "type": "percent"}
    mapping["fields"]["acquired_at"] = {"path": "time", "type": "time"}
    path = tmp_path / "nspo-v2.json"
    path.write_text(json.dumps(mapping))
    truth = make_scenes(12)
    with NSPOStandin(truth, path="/query/v2", rename={"cloudCover": "cloud", "acqTime": "time"}) as standin:
        scenes = {s.identifier: s for s in adapter("nspo", standin, mapping=str(path)).records()}
    assert {t.scene_id: (t.cloud_cover, t.acquired_at) for t in truth} == {
        i: (s.cloud_cover, s.acquired_at) for i, s in scenes.items()
    }


def test_a_broken_mapping_is_a_config_error_naming_the_problem(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"fields": {"scene_id": "id"}}')
    with pytest.raises(ConfigError, match="missing \\['acquired_at'\\]"):
        load_connector("stac", {"url": "http://127.0.0.1:9/", "mapping": str(path)})
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read"):
        load_connector("stac", {"url": "http://127.0.0.1:9/", "mapping": str(path)})


def test_hostile_scenes_are_stored_as_far_as_they_can_be(store, caplog):
    source = "stac:http://hostile.example"
    square = {"type": "Polygon", "coordinates": [[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]}
    bowtie = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}
    when = datetime(2024, 6, 1, tzinfo=TAIPEI)

    def scene(identifier, **fields):
        return Scene(
            source=source, identifier=identifier, **({"acquired_at": when, "footprint": square} | fields)
        )

    scenes = [
        scene("ok"),
        scene("bowtie", footprint=bowtie),
        scene(
            "outside",
            footprint={"type": "Polygon", "coordinates": [[[170, 0], [200, 0], [200, 5], [170, 0]]]},
        ),
        scene("not-geojson", footprint={"type": "Polygon", "coordinates": "nonsense"}),
        scene("nan-cloud", cloud_cover=math.nan),
        scene("too-cloudy", cloud_cover=150.0),
        scene("nul-satellite", satellite="FS\x005"),
        scene("no-time", acquired_at=None),
        scene("x" * 3000),
    ]
    with caplog.at_level(logging.WARNING):
        counts = store.catalogue.upsert_scenes(source, scenes)
    assert counts == {"new": 7, "updated": 0, "refused": 2}
    rows = stored(store, source)
    assert rows["ok"][3].startswith("POLYGON") and rows["bowtie"][3].startswith("MULTIPOLYGON")
    assert rows["outside"][3] is None and rows["not-geojson"][3] is None
    assert rows["nan-cloud"][4] is None and rows["too-cloudy"][4] is None
    assert rows["ok"][2] == when
    assert (
        "no acquisition time" in caplog.text
        and "made valid" in caplog.text
        and "outside WGS84" in caplog.text
    )


def test_archive_command_prints_scenes_and_fails_in_one_line():
    with STACStandin(make_scenes(12)) as standin:
        done = subprocess.run(
            [sys.executable, "-m", "geoweb.cli", "archive", "--adapter", "stac", "--url", standin.url,
             "--page-size", "5", "--since", "2024-01-01T05:00:00+00:00"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    scenes = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(scenes) == 9 and all(s["acquired_at"] >= "2024-01-01T05:00:00" for s in scenes)
    failed = subprocess.run(
        [sys.executable, "-m", "geoweb.cli", "archive", "--adapter", "nspo", "--url", "ftp://nowhere"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert failed.returncode == 1 and failed.stdout == ""
    assert failed.stderr.strip().splitlines()[-1].startswith("geoweb archive: nspo: setting url")
