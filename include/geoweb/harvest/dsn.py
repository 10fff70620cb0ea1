"""The libpq DSN of a database given by parts (host, port, user...), as an Airflow Connection holds it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg2.extensions import make_dsn

# Connection extras that are libpq settings; other extras (Airflow hook options) are not passed on.
LIBPQ_EXTRAS = frozenset(
    {"sslmode", "sslcert", "sslkey", "sslrootcert", "sslcrl", "connect_timeout", "options",
     "application_name", "keepalives", "keepalives_idle"}
)  # fmt: skip


def libpq_dsn(
    host: str | None,
    port: int | None,
    user: str | None,
    password: str | None,
    dbname: str | None,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """A keyword DSN (quoted as libpq needs): unset parts are left to libpq's defaults."""
    parts = {"host": host, "port": port, "user": user, "password": password, "dbname": dbname}
    parts |= {k: v for k, v in (extra or {}).items() if k in LIBPQ_EXTRAS}
    return make_dsn(**{k: v for k, v in parts.items() if v not in (None, "")})
