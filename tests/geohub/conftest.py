"""GeoHub on the real stack: a PostGIS database loaded with known resources (``geohub_dsn``), an Airflow API
server of the tests' own that serves this repository's plugins and searches it (``geohub_server``, stopped
at the end of the session), an admin's token, and ``get``: a GET of a GeoHub path as that admin.
``testweb`` (the integration tests' fixture) serves the MapServer a service's preview draws from."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from geoweb.store import Store
from tests.geohub import data
from tests.geohub.server import GeoHubServer
from tests.geohub.server import geohub_server as run_server
from tests.integration.conftest import testweb  # noqa: F401  (the session fixture, shared)


@pytest.fixture(scope="session")
def geohub_dsn(postgis_database) -> Iterator[str]:
    """A database of GeoHub's own: the tests assert exact result lists, which other tests' runs would change."""
    with postgis_database() as dsn:
        with Store(dsn) as store:
            store.migrate()
        data.load(dsn)
        yield dsn


@pytest.fixture(scope="session")
def geohub_server(geohub_dsn, tmp_path_factory) -> Iterator[GeoHubServer]:
    with run_server(geohub_dsn, tmp_path_factory.mktemp("airflow")) as server:
        yield server


@pytest.fixture(scope="session")
def token(geohub_server) -> str:
    return geohub_server.token()


@pytest.fixture(scope="module")
def get(geohub_server, token):
    """GET a GeoHub path (``/api/search``...) as the logged-in admin."""
    session = geohub_server.session(token)

    def get(path: str, **params):
        return session.get(f"{geohub_server.base_url}/geohub{path}", params=params, timeout=60)

    yield get
    session.close()
