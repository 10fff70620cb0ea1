"""What the DAGs' tasks share on the Airflow side: settings read from Airflow Connections, inside tasks only
(never at parse time), falling back to the environment. The library itself (``geoweb``) never imports Airflow.
"""

from __future__ import annotations

from geoweb_airflow.runs import RUN_PARAMS as RUN_PARAMS
from geoweb_airflow.runs import RunRule as RunRule
from geoweb_airflow.runs import resolve_run as resolve_run
from geoweb_airflow.runs import run_params as run_params

STORE_CONNECTION = "geoweb_db"  # the PostGIS database of harvest results
CONNECTOR_CONNECTION = "geoweb_{name}"  # a connector's settings: extra (url, page_size...) and password (key)
CRAWL_POOL = "geoweb_crawl"  # the Celery slots of every task that fetches from the web
SHARD_LABEL = "{{ shard_label }}"  # a mapped crawl task's map_index_template: set by crawl_shard


def form_params(params_class: type) -> dict:
    """The trigger form's Params of a params dataclass (``geoweb.harvest.params``): defaults, descriptions,
    schemas and sections from its fields."""
    from airflow.sdk import Param

    from geoweb.paramspec import param_specs

    return {
        name: Param(default, description=description, **schema)
        for name, default, description, schema in param_specs(params_class)
    }


def harvest_store():
    """The harvest database of a task."""
    from geoweb.store import Store

    return Store(task_harvest_dsn())


def migrate_harvest_database() -> list[str]:
    """What ``geoweb migrate`` does, in the first task of every DAG run: a deployment whose code brings a new
    migration needs no step of its own. Returns the versions applied (each is logged)."""
    from geoweb.store import migrate_database

    return migrate_database(task_harvest_dsn())


def task_harvest_dsn() -> str:
    """``harvest_dsn`` of the Connection as tasks read it."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    try:
        conn = Connection.get(STORE_CONNECTION)
    except AirflowNotFoundException:
        conn = None
    return harvest_dsn(conn)


def harvest_dsn(conn) -> str:
    """The harvest database's DSN: the Connection geoweb_db (``conn``, as the calling process reads
    Connections; None when it is not defined), else the GEOWEB_DB environment variable."""
    from geoweb.store import Store

    if conn is None:
        return Store.dsn_from_env()
    return libpq_dsn(conn.host, conn.port, conn.login, conn.password, conn.schema, conn.extra_dejson)


# Connection extras that are libpq settings; other extras (Airflow hook options) are not passed on.
LIBPQ_EXTRAS = frozenset(
    {"sslmode", "sslcert", "sslkey", "sslrootcert", "sslcrl", "connect_timeout", "options",
     "application_name", "keepalives", "keepalives_idle"}
)  # fmt: skip


def libpq_dsn(host, port, user, password, dbname, extra=None) -> str:
    """A keyword DSN (quoted as libpq needs) of a database given by parts, as a Connection holds it: unset
    parts are left to libpq's defaults."""
    from psycopg2.extensions import make_dsn

    parts = {"host": host, "port": port, "user": user, "password": password, "dbname": dbname}
    parts |= {k: v for k, v in (extra or {}).items() if k in LIBPQ_EXTRAS}
    return make_dsn(**{k: v for k, v in parts.items() if v not in (None, "")})


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


def crawl_shard(store, run_id: str, level: int, shard: int, params) -> dict:
    """Crawl one shard of a level (``geoweb.harvest.crawl.crawl_shard``) in a mapped task, naming the task in the
    UI by its shard and, once known, its hosts (the task's map_index_template is SHARD_LABEL)."""
    from airflow.sdk import get_current_context

    from geoweb.harvest import crawl

    context = get_current_context()
    context["shard_label"] = f"shard {shard}"  # the name if the crawl fails before its hosts are known
    summary = crawl.crawl_shard(store, run_id, level, shard, params)
    context["shard_label"] = shard_label(shard, summary.get("hosts", []))
    return summary


def shard_label(shard: int, hosts: list[str]) -> str:
    """A mapped crawl task's name: its shard and hosts."""
    return f"shard {shard}: {hosts_label(hosts)}" if hosts else f"shard {shard}: nothing pending"


def hosts_label(origins: list[str]) -> str:
    """Hosts as a mapped task's name shows them: the first few of many, without their scheme."""
    names = [o.split("://", 1)[-1] for o in origins]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
