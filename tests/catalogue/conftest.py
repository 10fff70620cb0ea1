"""The catalogue on the real parts: a PostGIS database of its own holding what the harvest steps loaded from
the test web's real servers (level 0 of their endpoints) beside GeoHub's known resources (tests/geohub/data),
the catalogue's process (pycsw and pygeoapi in .venv-catalogue, started as the stack starts it) over it, and
an Airflow API server whose GeoHub forwards ``/geohub/csw`` and ``/geohub/records`` to that process: every
client test goes through that proxy, as QGIS would."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from geoweb.harvest.crawl import crawl_shard, plan_level, start_run
from geoweb.harvest.params import HarvestParams
from geoweb.models import ALL_TYPES, Page, Resource
from geoweb.store import Store
from stack import catalogue as stack_catalogue
from stack import supervisor
from stack.supervisor import Service, StartError
from tests.geohub import data
from tests.geohub.server import GeoHubServer, free_port, geohub_server
from tests.integration.conftest import testweb  # noqa: F401  (the session fixture, shared)

# The test web's servers the catalogue tests read: each kind of OGC service, files, an OGC API (manifest types)
CRAWLED_TYPES = {"WMS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW", "KML", "SHAPEFILE", "GEOTIFF", "OGCAPI-FEATURES"}  # fmt: skip
CRAWL_RUN = "catalogue-crawl"
# What a JSON source may send and XML cannot hold, with pycsw's separators in its URL: one bad record must not
# fail an answer
CONTROL = Resource(
    url="http://api.example/a,b^c/collections", type="OGCAPI-FEATURES", title="Control\x01 characters\x0b",
    abstract="from\x1f JSON", keywords=["a, b", "c\x02"], bbox=(20.0, 50.0, 21.0, 51.0),
)  # fmt: skip


@dataclass(frozen=True)
class Catalogue:
    upstream: str  # the catalogue process itself
    geohub: GeoHubServer  # the API server whose /geohub forwards to it

    @property
    def csw(self) -> str:
        return f"{self.geohub.base_url}/geohub/csw"

    @property
    def records(self) -> str:
        return f"{self.geohub.base_url}/geohub/records"


def crawled(manifest: dict) -> list[dict]:
    """The test web's resources the fixture loads: reachable ones of CRAWLED_TYPES."""
    return [r for r in manifest["resources"] if r["type"] in CRAWLED_TYPES and r["via"] != "robots-excluded"]


def crawl(store: Store, seeds: list[str]) -> None:
    """What the seeds are, loaded with the harvest steps of the crawl DAG (level 0 only)."""
    params = HarvestParams.from_conf(
        {
            "seeds": seeds,
            "max_level": 0,
            "allowed_hosts": ["127.0.0.1"],
            "shards": 1,
            "types": list(ALL_TYPES),
        }
    )
    start_run(store, CRAWL_RUN, params)
    for shard in plan_level(store, CRAWL_RUN, 0, params):
        crawl_shard(store, CRAWL_RUN, 0, shard, params)


@pytest.fixture(scope="session")
def catalogue_dsn(postgis_database, testweb) -> Iterator[str]:  # noqa: F811
    with postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
            crawl(store, sorted({r["url"] for r in crawled(testweb)}))
            store.frontier.commit_pages(CRAWL_RUN, [Page(CONTROL.url, None, 0, [CONTROL])], 1, keyword_of={})
        data.load(dsn)
        yield dsn


@pytest.fixture(scope="session")
def catalogue(catalogue_dsn, tmp_path_factory) -> Iterator[Catalogue]:
    """The catalogue process, as the stack runs it but on ports of its own, and GeoHub in front of it."""
    if not (stack_catalogue.VENV / "bin" / "gunicorn").exists():
        pytest.skip(f"{stack_catalogue.VENV} is missing: run catalogue/setup.sh")
    home: Path = tmp_path_factory.mktemp("catalogue")
    port, geohub_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{port}"
    public = f"http://127.0.0.1:{geohub_port}/geohub"
    service = Service(
        "catalogue", stack_catalogue.command(port), (f"{upstream}/records?f=json",),
        stack_catalogue.environment(catalogue_dsn, public, port, str(home)), run_dir=home, log_dir=home,
    )  # fmt: skip
    try:
        supervisor.start([service])
    except StartError as exc:
        raise StartError(f"{exc}\n{service.output.read_text()[-3000:]}") from None
    try:
        env = {"GEOWEB_CATALOGUE_UPSTREAM": upstream}
        with geohub_server(catalogue_dsn, home, port=geohub_port, env=env) as server:
            yield Catalogue(upstream, server)
    finally:
        supervisor.stop(service)


@pytest.fixture(scope="session")
def auth(catalogue) -> dict[str, str]:
    """The headers of a logged-in client: the catalogue is behind the login unless made public."""
    return {"Authorization": f"Bearer {catalogue.geohub.token()}"}
