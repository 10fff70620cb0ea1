"""Reading the test database directly: what the store's methods do not expose."""

from __future__ import annotations

from geoweb.store import Store


def rows(store: Store, sql: str, *params) -> list[tuple]:
    with store.conn, store.conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def scalar(store: Store, sql: str, *params):
    return rows(store, sql, *params)[0][0]
