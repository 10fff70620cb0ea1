"""Crawling the test web's MapServer endpoints tags their datasets with the expected concepts, and MapServer's
real DescribeFeatureType answers, asked the way the WFS fallback asks, are read."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from geoweb.detect.ogc.wfs import describe_url, read_schema
from geoweb.fetch import Fetcher
from geoweb.models import Resource
from geoweb.settings import Settings
from testweb.layout import MAPSERVER, origin

pytestmark = pytest.mark.testweb

REGIONS = f"{origin(MAPSERVER)}/cgi-bin/mapserv?map=regions"
RIVERS = f"{origin(MAPSERVER)}/ows/rivers"
# (endpoint, type) -> dataset name -> concepts, as hand-labelled in tests/data/semantic/labelled.csv
EXPECTED = {
    (REGIONS, "WFS"): {"provinces": ["province"], "lakes": ["lake"], "stations": ["weather_station"]},
    (REGIONS, "WMS"): {
        "provinces": ["province"], "lakes": ["lake"], "stations": ["weather_station"], "elevation": ["dem"],
    },
    (REGIONS, "WCS"): {"elevation": ["elevation"]},  # WCS 2.0 gives no title ("Elevation model"): its name only
    (REGIONS, "SOS"): {"stations": ["monitoring_station"]},
    (RIVERS, "WFS"): {"rivers": ["river"], "gauges": ["gauging_station"]},
    (RIVERS, "WMS"): {"rivers": ["river"], "gauges": ["gauging_station"]},
}  # fmt: skip


@pytest.fixture(scope="module")
def records(testweb, tmp_path_factory) -> dict[tuple[str, str], dict]:
    out = tmp_path_factory.mktemp("semantic") / "resources.jsonl"
    command = [str(Path(sys.executable).with_name("geoweb")), "crawl", "--seed", REGIONS, "--seed", RIVERS]
    command += ["--max-level", "0", "--allow-host", "127.0.0.1", "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(r["url"], r["type"]): r for r in lines}


def short(name: str) -> str:
    return name.rpartition(":")[2]  # WFS 1.1 and 2.0 name them ms:lakes


def test_crawled_datasets_carry_the_expected_concepts(records):
    tagged = {
        key: {short(d["name"]): d["concepts"] for d in records[key]["dataset_list"]} for key in EXPECTED
    }
    assert tagged == EXPECTED


def test_each_concept_says_how_it_was_matched(records):
    for dataset in records[(RIVERS, "WFS")]["dataset_list"]:
        (match,) = dataset["extra"]["concept_matches"]
        assert match["method"] == "label" and match["score"] == 1.0


@pytest.mark.parametrize(("endpoint", "version"), [(REGIONS, "1.1.0"), (REGIONS, "2.0.0"), (RIVERS, "1.0.0")])
def test_mapserver_schemas_are_read_as_the_fallback_asks_for_them(testweb, endpoint, version):
    settings = Settings(allowed_hosts=frozenset({"127.0.0.1"}))
    names = ["ms:provinces", "ms:lakes"] if endpoint == REGIONS else ["rivers"]
    url = describe_url(Resource(url=endpoint, type="WFS", version=version), names)

    async def fetch():
        async with Fetcher(settings) as fetcher:
            return await fetcher.get(url)

    response = asyncio.run(fetch())
    schema = read_schema(response.body, settings.schema_max_bytes)
    if endpoint == REGIONS:
        assert schema == {"provinces": ["name", "area_km2"], "lakes": ["name", "area_km2"]}
    else:
        assert schema == {"rivers": ["name"]}
