"""The harvest database GeoHub searches: the Airflow Connection ``geoweb_db``, else GEOWEB_DB, as the DAGs
name it. Looked up on the first search (never at import), then its pool serves every request."""

from __future__ import annotations

import os

from geoweb.harvest.dsn import libpq_dsn
from geoweb.search import SearchDatabase, SearchUnavailable
from geoweb_airflow import STORE_CONNECTION


def harvest_dsn() -> str:
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models.connection import Connection

    try:
        conn = Connection.get_connection_from_secrets(STORE_CONNECTION)
    except AirflowNotFoundException:
        dsn = os.environ.get("GEOWEB_DB", "").strip()
        if not dsn:
            raise SearchUnavailable(
                f"neither the Airflow Connection {STORE_CONNECTION} nor GEOWEB_DB is set"
            ) from None
        return dsn
    return libpq_dsn(conn.host, conn.port, conn.login, conn.password, conn.schema, conn.extra_dejson)


database = SearchDatabase(harvest_dsn)
