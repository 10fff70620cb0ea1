"""What the DAGs' tasks share on the Airflow side: settings read from Airflow Connections, inside tasks only
(never at parse time), falling back to the environment. The library itself (``geoweb``) never imports Airflow.
"""

from __future__ import annotations

STORE_CONNECTION = "geoweb_db"  # the PostGIS database of harvest results
CONNECTOR_CONNECTION = "geoweb_{name}"  # a connector's settings: extra (url, page_size...) and password (key)
POLICIES_VARIABLE = "geoweb_url_policies"  # URL-pattern policies, a JSON list (docs/revisits.md)


def harvest_store():
    """The harvest database, from the Connection geoweb_db, else the GEOWEB_DB environment variable."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    from geoweb.harvest.dsn import libpq_dsn
    from geoweb.store import Store

    try:
        conn = Connection.get(STORE_CONNECTION)
    except AirflowNotFoundException:
        return Store.from_env()
    return Store(libpq_dsn(conn.host, conn.port, conn.login, conn.password, conn.schema, conn.extra_dejson))


def connector_config(name: str) -> dict:
    """A connector's settings, from the Connection geoweb_<name>, else the environment (GEOWEB_<NAME>_*)."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    from geoweb.connectors.api import config_from_env

    try:
        conn = Connection.get(CONNECTOR_CONNECTION.format(name=name))
    except AirflowNotFoundException:
        return config_from_env(name)
    return {**conn.extra_dejson, "key": conn.password} if conn.password else dict(conn.extra_dejson)


def url_policies() -> str:
    """The URL-pattern policies of the Variable geoweb_url_policies (JSON text); "" when it is not set, so
    that GEOWEB_URL_POLICIES applies."""
    from airflow.sdk import Variable

    return Variable.get(POLICIES_VARIABLE, default="") or ""
