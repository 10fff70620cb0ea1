"""libpq_dsn: a connection's parts as a keyword DSN libpq reads back exactly, hostile passwords included."""

from psycopg2.extensions import parse_dsn

from geoweb_airflow import libpq_dsn


def test_parts_round_trip_through_libpq():
    password = "p a's\\w=rd;@/?"
    dsn = libpq_dsn("db.example.org", 5433, "geoweb", password, "geoweb", {"sslmode": "require"})
    assert parse_dsn(dsn) == {
        "host": "db.example.org", "port": "5433", "user": "geoweb", "password": password, "dbname": "geoweb",
        "sslmode": "require",
    }  # fmt: skip


def test_unset_parts_and_hook_extras_are_left_out():
    dsn = libpq_dsn("127.0.0.1", None, "geoweb", None, "", {"cursor": "dictcursor", "sslmode": None})
    assert parse_dsn(dsn) == {"host": "127.0.0.1", "user": "geoweb"}
