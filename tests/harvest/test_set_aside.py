"""A host set aside in one level of a harvest run stays aside for the run: the next level's shard defers its
URLs without a request, and the run's report counts them."""

from __future__ import annotations

import uuid

from geoweb.harvest.crawl import crawl_shard, finish_run, plan_level, start_run
from geoweb.harvest.params import HarvestParams
from geoweb.settings import Settings
from geoweb.store import Store
from tests.hostile.servers import HostileServer, PagesServer

TARPIT = "/status/503?retry_after=60&page={}"


def test_a_host_set_aside_at_one_level_is_deferred_at_the_next(postgis_dsn):
    failures = Settings().host_max_failures
    with HostileServer() as tarpit:
        level_1 = "".join(f'<a href="{tarpit.url(TARPIT.format(i))}">x</a>' for i in range(30))
        level_2 = "".join(f'<a href="{tarpit.url(TARPIT.format(100 + i))}">x</a>' for i in range(5))
        pages = {
            "/": ("text/html", f'<html><body>{level_1}<a href="/more">more</a></body></html>'.encode()),
            "/more": ("text/html", f"<html><body>{level_2}</body></html>".encode()),
        }
        with PagesServer(pages) as site:
            params = HarvestParams.from_conf({
                "seeds": [site.url("/")], "allowed_hosts": [site.hostport, tarpit.hostport], "max_level": 2,
                "shards": 1,
            })  # fmt: skip
            run_id = f"set-aside-{uuid.uuid4().hex[:8]}"
            with Store(postgis_dsn) as store:
                start_run(store, run_id, params)
                for level in range(3):
                    for shard in plan_level(store, run_id, level, params):
                        crawl_shard(store, run_id, level, shard, params)
                        if level == 1:
                            asked_at_level_1 = len([p for p in tarpit.paths() if p.startswith("/status/")])
                summary = finish_run(store, run_id)
        asked = [p for p in tarpit.paths() if p.startswith("/status/")]
    assert failures <= asked_at_level_1 <= failures + 1
    assert len(asked) == asked_at_level_1  # nothing asked of the tarpit at level 2
    by_level = {s["level"]: s for s in summary["levels"]}
    assert by_level[1]["deferred"] == 30 - asked_at_level_1 and by_level[1]["deferred_hosts"] == 1
    assert by_level[2]["deferred"] == 5 and by_level[2]["urls"] == 0
    assert summary["deferred"] == 30 - asked_at_level_1 + 5
