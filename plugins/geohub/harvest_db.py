"""The harvest database GeoHub searches, named as the DAGs name it (``geoweb_airflow.harvest_dsn``): looked up
on the first search (never at import), then its pool serves every request. Routes take it as the dependency
``HarvestDatabase``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from geoweb.geohub import SearchDatabase
from geoweb_airflow import STORE_CONNECTION, harvest_dsn


def api_server_dsn() -> str:
    """The DSN, with the Connection as the API server reads Connections (its secrets backends)."""
    from airflow.exceptions import AirflowNotFoundException
    from airflow.models.connection import Connection

    try:
        conn = Connection.get_connection_from_secrets(STORE_CONNECTION)
    except AirflowNotFoundException:
        conn = None
    return harvest_dsn(conn)


database = SearchDatabase(api_server_dsn)


async def harvest_database() -> SearchDatabase:
    return database


HarvestDatabase = Annotated[SearchDatabase, Depends(harvest_database)]
