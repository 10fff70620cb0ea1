"""The revisit schedule: exact intervals after changes, unchanged checks and failures; dead after N; policies'
fixed intervals; the revisit params."""

from __future__ import annotations

import pytest

from geoweb.harvest.params import RevisitParams
from geoweb.harvest.recheck import fingerprint, recheck_url
from geoweb.harvest.revisit import Schedule
from geoweb.models import Dataset, Due, Resource, ScheduleState
from geoweb.paramspec import InvalidParams

H = 3600.0
SCHEDULE = Schedule(min_interval=1 * H, max_interval=64 * H, dead_after=3)


def run(outcomes: str, state: ScheduleState, fixed: float | None = None) -> list[tuple[ScheduleState, float]]:
    """The states and delays after each outcome: u(nchanged), c(hanged), f(ailed)."""
    names = {"u": "unchanged", "c": "changed", "f": "failed"}
    steps = []
    for letter in outcomes:
        state, delay = SCHEDULE.after(state, names[letter], fixed)
        steps.append((state, delay))
    return steps


def test_unchanged_doubles_up_to_the_maximum():
    delays = [delay for _, delay in run("uuuuuuu", ScheduleState(interval=4 * H))]
    assert delays == [8 * H, 16 * H, 32 * H, 64 * H, 64 * H, 64 * H, 64 * H]


def test_changed_halves_down_to_the_minimum():
    steps = run("ccccc", ScheduleState(interval=8 * H))
    assert [delay for _, delay in steps] == [4 * H, 2 * H, 1 * H, 1 * H, 1 * H]
    assert steps[-1][0] == ScheduleState(interval=1 * H, failures=0, checks=5, changes=5, dead=False)


def test_a_flipping_service_settles_at_the_minimum_and_a_calm_one_climbs_back():
    steps = run("ccccuuu", ScheduleState(interval=24 * H))
    assert [delay for _, delay in steps] == [12 * H, 6 * H, 3 * H, 1.5 * H, 3 * H, 6 * H, 12 * H]


def test_failures_retry_sooner_then_mark_dead_and_a_success_revives():
    steps = run("ffffu", ScheduleState(interval=16 * H, checks=7, changes=2))
    failures = [(s.failures, s.dead, s.interval, delay) for s, delay in steps[:4]]
    # the learned interval is kept; retries after 1 h, 2 h; the third failure in a row: dead, maximum interval
    assert failures == [(1, False, 16 * H, 1 * H), (2, False, 16 * H, 2 * H), (3, True, 16 * H, 64 * H),
                        (4, True, 16 * H, 64 * H)]  # fmt: skip
    revived, delay = steps[4]
    assert revived == ScheduleState(interval=32 * H, failures=0, checks=12, changes=2, dead=False)
    assert delay == 32 * H


def test_a_retry_never_waits_longer_than_the_learned_interval():
    steps = run("ff", ScheduleState(interval=1.5 * H))
    assert [delay for _, delay in steps] == [1 * H, 1.5 * H]


def test_a_policy_interval_replaces_the_learned_one():
    steps = run("cuf", ScheduleState(interval=8 * H), fixed=6 * H)
    assert [delay for _, delay in steps] == [6 * H, 6 * H, 1 * H]
    assert all(state.interval == 6 * H for state, _ in steps)


def test_bad_schedules_and_outcomes_are_refused():
    with pytest.raises(ValueError, match="min_interval <= max_interval"):
        Schedule(min_interval=2 * H, max_interval=1 * H, dead_after=3)
    with pytest.raises(ValueError, match="dead_after"):
        Schedule(min_interval=H, max_interval=H, dead_after=0)
    with pytest.raises(ValueError, match="unknown outcome 'gone'"):
        SCHEDULE.after(ScheduleState(interval=H), "gone")


def due(type_: str, url: str, version: str | None = None) -> Due:
    return Due(1, url, type_, version, None, ScheduleState(interval=H))


def test_recheck_url_asks_an_ogc_service_for_its_type_and_version():
    assert (
        recheck_url(due("WMS", "http://h/cgi-bin/mapserv?map=regions", "1.3.0"))
        == "http://h/cgi-bin/mapserv?map=regions&service=WMS&request=GetCapabilities&version=1.3.0"
    )
    assert recheck_url(due("CSW", "http://h/csw")) == "http://h/csw?service=CSW&request=GetCapabilities"
    assert recheck_url(due("WFS", "http://h/ows", "2.0.0&x=1")).endswith("version=2.0.0%26x%3D1")
    assert recheck_url(due("KML", "http://h/a.kml")) == "http://h/a.kml"


def test_fingerprint_is_the_document_hash_else_a_digest_of_what_was_read():
    whole = Resource("http://h/a.zip", "SHAPEFILE", content_sha256="ab" * 32)
    assert fingerprint(whole) == "ab" * 32
    ranged = Resource("http://h/a.zip", "SHAPEFILE", datasets=[Dataset("roads")], level=2)
    moved = Resource("http://h/a.zip", "SHAPEFILE", datasets=[Dataset("roads")], level=0, source_page="x")
    grown = Resource("http://h/a.zip", "SHAPEFILE", datasets=[Dataset("roads"), Dataset("rails")])
    assert fingerprint(ranged) == fingerprint(moved) != fingerprint(grown)


def test_params_validate_and_become_settings():
    params = RevisitParams.from_conf({"batch_size": 10, "min_interval_hours": 0.5, "types": ["WMS"]})
    settings = params.settings()
    assert (settings.revisit_min_interval, settings.revisit_dead_after, params.types) == (1800, 5, ("WMS",))
    assert RevisitParams.from_conf(params.to_conf()) == params
    for conf, key in [({"batch_size": 0}, "batch_size"), ({"types": ["X"]}, "types"),
                      ({"min_interval_hours": 0}, "min_interval_hours"), ({"speed": 1}, "speed"),
                      ({"min_interval_hours": 10, "max_interval_hours": 5}, "min_interval_hours")]:  # fmt: skip
        with pytest.raises(InvalidParams, match=key):
            RevisitParams.from_conf(conf)
