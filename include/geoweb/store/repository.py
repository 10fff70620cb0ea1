"""What every repository of the store shares: the store's one connection, and a transaction on it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from geoweb.store.clean import Cleaner

PAGE_SIZE = 1000  # rows per INSERT statement


@contextmanager
def transaction(conn) -> Iterator:
    """A cursor in one transaction of a psycopg2 connection: committed when the block ends, rolled back when
    it raises."""
    with conn, conn.cursor() as cur:
        yield cur


class Repository:
    """The queries of one group of tables, over the connection of the ``Store`` that holds it. Each public
    method is one transaction."""

    def __init__(self, conn):
        self.conn = conn

    def _transaction(self):
        return transaction(self.conn)


def json_text(value: dict, subject: str) -> str:
    """A dict as cleaned JSON text, its changes logged about ``subject``."""
    clean = Cleaner()
    text = clean.json(value, "json")
    clean.log_changes(subject)
    return text


def error_line(exc: Exception) -> str:
    """The first line of a database error: its message without the context PostgreSQL adds."""
    return str(exc).partition("\n")[0]


def sql_array(values: Iterable[str | int | bool | None]) -> str:
    """The text form of a PostgreSQL array of ``values``, for a ``%s::type[]`` parameter. The server reads it
    as one value; a list, which psycopg2 sends as ``ARRAY[...]``, costs it an expression per element to parse
    and plan, and a batch of thousands of keys more than the lookup it asks for."""
    return "{" + ",".join(_array_element(value) for value in values) + "}"


def _array_element(value: str | int | bool | None) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, int):
        return str(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
