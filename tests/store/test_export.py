import json
import os
import subprocess
import sys

import pytest

from geoweb.models import Dataset
from geoweb.store import StoreError
from tests.store.pages import kml, page, wms


def as_json(records: list[dict]) -> list[dict]:
    """Records as a JSON-lines reader sees them (tuples become lists)."""
    return [json.loads(json.dumps(r, ensure_ascii=False)) for r in records]


def crawled(site: str) -> list:
    """Resources as the crawl records them, with datasets the store must keep in order, nameless or not."""
    services = wms(site, level=1, source=f"{site}/", layers=3)
    services.datasets += [
        Dataset(name="layer0", title="A repeated name", bbox=(170.0, -20.0, -170.0, -10.0)),
        Dataset(name="point", bbox=(12.345678901234567, 45.0, 12.345678901234567, 45.0), keywords=["π"]),
    ]
    deeper = kml(site, level=2, source=f"{site}/maps")
    deeper.discovered_at = "2026-03-01T09:00:00+00:00"
    return [services, deeper]


def test_export_returns_the_records_of_the_crawl(store, run_id, site):
    resources = crawled(site)
    store.frontier.commit_pages(run_id, [page(f"{site}/maps", 1, f"{site}/", resources[:1])], 4)
    store.frontier.commit_pages(run_id, [page(f"{site}/files", 2, f"{site}/maps", resources[1:])], 4)
    assert as_json(list(store.resources.export(run_id))) == as_json([r.to_record() for r in resources])


def test_export_of_an_unknown_run_says_so(store):
    with pytest.raises(StoreError, match="unknown run 'no-such-run'"):
        next(store.resources.export("no-such-run"))


# geoweb run as from a clone without a local stack, whether or not this clone's stack runs
WITHOUT_STACK = (
    "import pathlib, sys; import geoweb.local_stack as local; local.CLONE = pathlib.Path(sys.argv[1]); "
    "from geoweb.cli import main; sys.exit(main(sys.argv[2:]))"
)


def geoweb(*args: str, db: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GEOWEB_DB"}
    if db:
        env["GEOWEB_DB"] = db
    command = [sys.executable, "-c", WITHOUT_STACK, "/nonexistent-clone", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_geoweb_export_writes_the_run_as_json_lines(store, postgis_dsn, run_id, site, tmp_path):
    resources = crawled(site)
    store.frontier.commit_pages(run_id, [page(f"{site}/maps", 1, f"{site}/", resources)], 4)
    expected = as_json([r.to_record() for r in sorted(resources, key=lambda r: r.level)])
    for run in (run_id, "latest"):
        output = tmp_path / f"{run}.jsonl"
        done = geoweb("export", "--run", run, "--output", str(output), db=postgis_dsn)
        assert done.returncode == 0, done.stderr
        assert [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()] == expected
        assert f"exported 2 resources of run {run_id}" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{run_id}.jsonl", "latest.jsonl"])


def test_geoweb_export_fails_clearly_and_writes_nothing(postgis_dsn, tmp_path):
    output = tmp_path / "out.jsonl"
    unset = geoweb("export", "--run", "latest", "--output", str(output), db=None)
    assert unset.returncode == 1
    assert "GEOWEB_DB is not set" in unset.stderr
    unknown = geoweb("export", "--run", "no-such-run", "--output", str(output), db=postgis_dsn)
    assert unknown.returncode == 1
    assert "unknown run 'no-such-run'" in unknown.stderr
    assert "Traceback" not in unset.stderr + unknown.stderr
    assert list(tmp_path.iterdir()) == []
