"""How big the check history grows, and whether it stays quick to read: 1,000,000 synthetic hourly checks of
1,000 WMS (about 42 days each) in a scratch database, then the bytes per row of ``resource_checks`` (its
indexes included), pruning to 31 days, the bytes per row of ``resource_check_days``, and the time of one
resource's ``resource_quality`` row and of all. Not a test (it takes a minute): run it with
``python -m tests.store.measure_check_history`` while the local stack's PostgreSQL can start."""

from __future__ import annotations

import time

from geoweb.store import Store
from stack import postgres as stack_postgres

RESOURCES = 1_000
CHECKS_EACH = 1_000
# 2 % failed; a scheduled run's id; sha256 fingerprints; times and sizes of a typical capabilities document
SYNTHETIC_CHECKS = """
INSERT INTO resource_checks (resource_id, run_id, checked_at, outcome, http_status, error_reason, error_message,
    content_sha256, seconds, details, operation, first_byte_seconds, total_seconds, bytes)
SELECT r.id, 'scheduled__' || to_char(t, 'YYYY-MM-DD"T"HH24:00:00+00:00'), t,
       CASE WHEN failed THEN 'failed' ELSE 'unchanged' END, CASE WHEN failed THEN 503 ELSE 200 END,
       CASE WHEN failed THEN 'http_status' END, CASE WHEN failed THEN 'HTTP 503' END,
       CASE WHEN NOT failed THEN encode(sha256(r.id::text::bytea), 'hex') END,
       0.2 + random(), '{}', 'GetCapabilities', CASE WHEN NOT failed THEN 0.05 + random() / 5 END,
       CASE WHEN NOT failed THEN 0.1 + random() / 2 END, CASE WHEN NOT failed THEN 20000 + r.id END
FROM generate_series(1, %(checks)s) AS h,
     LATERAL (SELECT now() - make_interval(hours => %(checks)s - h) AS t) AS at,
     resources r,
     LATERAL (SELECT random() < 0.02 AS failed) AS f
ORDER BY t
"""


def size(store: Store, table: str) -> tuple[int, int]:
    """The bytes of ``table`` with its indexes and TOAST, and its rows."""
    with store.transaction() as cur:
        cur.execute(f"SELECT pg_total_relation_size('{table}'), (SELECT count(*) FROM {table})")
        return cur.fetchone()


def measure(dsn: str) -> None:
    with Store(dsn) as store:
        store.migrate()
        with store.transaction() as cur:
            cur.execute(
                "INSERT INTO resources (url, type, version) SELECT 'http://host' || n || '.example/wms', "
                "'WMS', '1.3.0' FROM generate_series(1, %s) AS n",
                (RESOURCES,),
            )
            started = time.monotonic()
            cur.execute(SYNTHETIC_CHECKS, {"checks": CHECKS_EACH})
            print(f"inserted {cur.rowcount:,} checks in {time.monotonic() - started:.1f} s")
        vacuum(dsn)
        total, rows = size(store, "resource_checks")
        print(f"resource_checks: {total:,} bytes for {rows:,} rows: {total / rows:.0f} bytes a check")
        print(f"  of which indexes: {index_bytes(store):,} bytes")
        print(f"resource_quality of one resource: {quality_ms(store):.1f} ms")
        started = time.monotonic()
        store.revisits.quality(range(1, RESOURCES + 1))
        print(f"resource_quality of all {RESOURCES:,}: {(time.monotonic() - started) * 1000:.0f} ms")
        started = time.monotonic()
        pruned = store.revisits.prune_checks(31)
        print(f"pruned {pruned:,} checks older than 31 days in {time.monotonic() - started:.1f} s")
        vacuum(dsn)
        days, day_rows = size(store, "resource_check_days")
        print(f"resource_check_days: {days:,} bytes for {day_rows:,} rows: {days / day_rows:.0f} bytes a day")
        total, rows = size(store, "resource_checks")
        print(f"resource_checks after pruning: {rows:,} rows, {total:,} bytes (space kept for reuse)")
        print(f"resource_quality of one resource: {quality_ms(store):.1f} ms")


def vacuum(dsn: str) -> None:
    import psycopg2

    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("VACUUM ANALYZE resource_checks")
        cur.execute("VACUUM ANALYZE resource_check_days")
    conn.close()


def index_bytes(store: Store) -> int:
    with store.transaction() as cur:
        cur.execute("SELECT pg_indexes_size('resource_checks')")
        return cur.fetchone()[0]


def quality_ms(store: Store) -> float:
    """The best of five reads of one resource's quality row."""
    best = float("inf")
    for resource_id in range(1, 6):
        started = time.monotonic()
        store.revisits.quality([resource_id * 97])
        best = min(best, time.monotonic() - started)
    return best * 1000


def main() -> None:
    started = not stack_postgres.running()
    if started:
        stack_postgres.start()
    try:
        with stack_postgres.scratch_database("geoweb_measure") as dsn:
            measure(dsn)
    finally:
        if started:
            stack_postgres.stop()


if __name__ == "__main__":
    main()
