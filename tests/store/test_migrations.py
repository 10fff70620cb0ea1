import threading
from pathlib import Path

import pytest

from geoweb import cli
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


def test_geoweb_migrate_applies_the_pending_versions_and_says_which(postgis_database, monkeypatch, capsys):
    with postgis_database() as dsn:
        monkeypatch.setenv("GEOWEB_DB", dsn)
        assert cli.main(["migrate"]) == 0
        assert capsys.readouterr().out.splitlines() == [f"applied {version}" for version in VERSIONS]
        assert cli.main(["migrate"]) == 0
        assert capsys.readouterr().out == "the harvest database is up to date\n"


def test_the_library_and_the_dags_migrate_only_through_migrate_database():
    """``geoweb migrate``, the stack and every DAG's first task call ``migrate_database``; no use case does."""
    repo = Path(__file__).parents[2]
    sources = [*(repo / "include").rglob("*.py"), *(repo / "dags").glob("*.py")]
    callers = [
        p.relative_to(repo).as_posix() for p in sources if ".migrate()" in p.read_text(encoding="utf-8")
    ]
    assert callers == ["include/geoweb/store/store.py"]


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


FRONTIER_BEFORE_0015 = [  # (run_id, url, level, shard, origin, source_page, keyword, status, error_reason, score)
    ("manual__2026-12-01T08:00:00+00:00", "http://a.example/", 0, 1, "http://a.example", "http://catalogue.example/r/1",
     "rivers", "fetched", None, 0.0),
    ("manual__2026-12-01T08:00:00+00:00", "http://a.example/maps?x=1", 1, 1, "http://a.example", "http://a.example/",
     "rivers", "error", "timeout", 0.25),
    ("manual__2026-12-01T08:00:00+00:00", "https://b.example:8443/wms", 1, 0, "https://b.example:8443",
     "http://a.example/", "rivers", "deferred", "host_failures", 0.5),
    ("manual__2026-12-01T08:00:00+00:00", "http://a.example/河川", 2, 1, "http://a.example",
     "http://a.example/maps?x=1", None, "discovered", None, 0.125),
    ("scheduled__2026-12-02T00:00:00+00:00", "http://a.example/", 0, 1, "http://a.example", None, None, "fetched",
     None, 0.0),
    ("scheduled__2026-12-02T00:00:00+00:00", "http://a.example/maps?x=1", 1, 1, "http://a.example",
     "http://a.example/", None, "skipped", "budget", 0.25),
]  # fmt: skip
FRONTIER_READ = (
    "SELECT run_id, url, level, shard, origin, source_page, keyword, status, error_reason, score, {} "
    "FROM {} ORDER BY run_id, url"
)


def test_the_compact_frontier_keeps_every_row_of_every_run(postgis_database, tmp_path):
    for path in MIGRATIONS.iterdir():
        if path.name.endswith(".sql") and path.name < "0015":
            (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    with postgis_database() as dsn, Store(dsn) as store:
        apply_migrations(store.conn, tmp_path)
        with store.conn, store.conn.cursor() as cur:
            for run_id in sorted({row[0] for row in FRONTIER_BEFORE_0015}):
                cur.execute("INSERT INTO crawl_runs (run_id, status) VALUES (%s, 'failed')", (run_id,))
            cur.executemany(
                "INSERT INTO frontier (run_id, url, level, shard, origin, source_page, keyword, status, "
                "error_reason, score) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                FRONTIER_BEFORE_0015,
            )
        # the time of an outcome is kept; a URL still to fetch has none
        before = rows(
            store, FRONTIER_READ.format("CASE WHEN status <> 'discovered' THEN updated_at END", "frontier")
        )
        figures = [
            rows(store, "SELECT * FROM level_figures(%s)", run) for run in sorted({r[0] for r in before})
        ]
        assert store.migrate()[0] == "0015_compact_frontier"
        assert rows(store, FRONTIER_READ.format("updated_at", "frontier_urls")) == before
        assert [
            rows(store, "SELECT * FROM level_figures(%s)", run) for run in sorted({r[0] for r in before})
        ] == figures
        # a source page that is a row of the run is kept as the hash of that row, any other as text
        assert rows(
            store, "SELECT url, source_page IS NULL, source_hash IS NULL FROM frontier ORDER BY run_key, url"
        ) == [
            ("http://a.example/", False, True),
            ("http://a.example/maps?x=1", True, False),
            ("http://a.example/河川", True, False),
            ("https://b.example:8443/wms", True, False),
            ("http://a.example/", True, True),
            ("http://a.example/maps?x=1", True, False),
        ]
        # the failed run resumes on the converted rows
        run = "manual__2026-12-01T08:00:00+00:00"
        assert list(store.frontier.pending_urls(run, 2, 1)) == [
            ("http://a.example/河川", "http://a.example/maps?x=1", None, 0.125)
        ]
        assert store.frontier.set_aside(run) == {"https://b.example:8443": "host_failures"}
        assert store.frontier.origin_counts(run, 1, ["http://a.example"]) == {"http://a.example": 3}
