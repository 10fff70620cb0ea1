"""GeoHub on the real stack: a PostGIS database loaded with known resources (``geohub_dsn``), an Airflow API
server of the tests' own that serves this repository's plugins and searches it (``geohub_server``, stopped
at the end of the session), and an admin's token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.geohub import data
from tests.geohub.server import GeoHubServer
from tests.geohub.server import geohub_server as run_server


@pytest.fixture(scope="session")
def geohub_dsn(postgis_dsn) -> str:
    data.load(postgis_dsn)
    return postgis_dsn


@pytest.fixture(scope="session")
def geohub_server(geohub_dsn, tmp_path_factory) -> Iterator[GeoHubServer]:
    with run_server(geohub_dsn, tmp_path_factory.mktemp("airflow")) as server:
        yield server


@pytest.fixture(scope="session")
def token(geohub_server) -> str:
    return geohub_server.token()
