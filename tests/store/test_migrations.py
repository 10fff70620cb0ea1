import threading

import pytest

from geoweb.store import MigrationError, Store
from geoweb.store.migrations import MIGRATIONS, apply_migrations
from tests.store.queries import rows, scalar

VERSIONS = sorted(p.name.removesuffix(".sql") for p in MIGRATIONS.iterdir() if p.name.endswith(".sql"))


def test_migrate_applies_every_version_once(postgis_database):
    with postgis_database() as dsn, Store(dsn) as store:
        assert store.migrate() == VERSIONS
        assert store.migrate() == []
        assert [
            v for (v,) in rows(store, "SELECT version FROM schema_migrations ORDER BY version")
        ] == VERSIONS
        tables = {t for (t,) in rows(store, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        assert {"crawl_runs", "crawl_levels", "resources", "datasets", "run_resources", "frontier"} <= tables


def test_the_shared_test_database_is_migrated_already(store):
    assert store.migrate() == []


def test_workers_migrating_at_once_apply_each_version_once(postgis_database):
    barrier = threading.Barrier(2)
    results: list = []

    def worker(dsn: str) -> None:
        with Store(dsn) as store:
            barrier.wait()
            try:
                results.append(store.migrate())
            except Exception as exc:  # the test asserts there is none
                results.append(exc)

    with postgis_database() as dsn:
        threads = [threading.Thread(target=worker, args=(dsn,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not [r for r in results if isinstance(r, Exception)]
        assert sorted(results, key=len) == [[], VERSIONS]
        with Store(dsn) as store:
            assert scalar(store, "SELECT count(*) FROM schema_migrations") == len(VERSIONS)


def test_a_failing_migration_is_rolled_back_and_named(postgis_database, tmp_path):
    (tmp_path / "0001_first.sql").write_text("CREATE TABLE first (x integer);")
    (tmp_path / "0002_broken.sql").write_text("CREATE TABLE second (x integer); SELECT 1 / 0;")
    (tmp_path / "README.txt").write_text("not a migration")
    with postgis_database() as dsn, Store(dsn) as store:
        with pytest.raises(MigrationError, match="0002_broken"):
            apply_migrations(store.conn, tmp_path)
        assert scalar(store, "SELECT to_regclass('first') IS NOT NULL")
        assert scalar(store, "SELECT to_regclass('second') IS NULL")
        assert rows(store, "SELECT version FROM schema_migrations") == [("0001_first",)]
        # the lock was released and the fixed migration applies
        (tmp_path / "0002_broken.sql").write_text("CREATE TABLE second (x integer);")
        with Store(dsn) as other:
            assert apply_migrations(other.conn, tmp_path) == ["0002_broken"]
