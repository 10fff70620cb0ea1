"""HarvestParams: defaults, the engine settings a run gets, and bad confs refused with the key named."""

import pytest

from geoweb.harvest.params import MAX_LEVEL, HarvestParams
from geoweb.models import ALL_TYPES
from geoweb.paramspec import InvalidParams, param_specs
from geoweb.settings import Settings

SEED = "https://example.org/maps/"


def test_defaults_and_json_round_trip():
    params = HarvestParams.from_conf({"seeds": [SEED]})
    assert params.max_level == MAX_LEVEL and params.types == ALL_TYPES and params.shards == 8
    assert params.keywords == () and params.search_providers == ()
    assert HarvestParams.from_conf(params.to_conf()) == params
    # the DAG's form defaults are the dataclass defaults, in JSON
    defaults = {name: default for name, default, _, _ in param_specs(HarvestParams)}
    assert defaults == HarvestParams(seeds=()).to_conf()
    assert all(description for _, _, description, _ in param_specs(HarvestParams))


def test_settings_carry_scope_and_politeness_and_always_obey_robots():
    params = HarvestParams.from_conf(
        {"seeds": [SEED], "max_level": 2, "allowed_hosts": ["LocalHost:8080"], "concurrency": 8,
         "per_host_concurrency": 1, "per_host_delay": 1.5, "max_pages_per_host": 10}
    )  # fmt: skip
    settings = params.settings(Settings(obey_robots=False, read_timeout=3.0))
    assert settings.max_level == 2 and settings.allowed_hosts == frozenset({"localhost:8080"})
    assert (settings.concurrency, settings.per_host_concurrency, settings.per_host_delay) == (8, 1, 1.5)
    assert settings.max_pages_per_host == 10
    assert settings.obey_robots is True
    assert settings.read_timeout == 3.0  # everything else comes from the base settings


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"seeds": [SEED], "max_level": 9}, "param max_level: 9 is greater than the maximum of 5"),
        ({"seeds": [SEED], "max_level": -1}, "param max_level: -1 is less than the minimum of 0"),
        ({"seeds": [SEED], "max_level": "3"}, "param max_level: '3' is not of type 'integer'"),
        (
            {"seeds": ["ftp://example.org/"]},
            "param seeds[0]: 'ftp://example.org/' is not an absolute http(s) URL",
        ),
        (
            {"seeds": [SEED, "javascript:alert(1)"]},
            "param seeds[1]: 'javascript:alert(1)' is not an absolute",
        ),
        ({"seeds": SEED}, "param seeds: 'https://example.org/maps/' is not of type 'array'"),
        ({"seeds": []}, "param seeds: give at least one seed URL"),
        ({}, "param seeds: give at least one seed URL"),
        ({"seeds": [SEED], "types": ["WMS", "OGCAPI"]}, "param types[1]: 'OGCAPI' is not one of"),
        ({"seeds": [SEED], "types": []}, "param types: [] should be non-empty"),
        (
            {"seeds": [SEED], "search_providers": ["bing"]},
            "param search_providers[0]: 'bing' is not one of ['searxng', 'google', 'brave', 'datagov', 'ckan']",
        ),
        ({"seeds": [SEED], "keywords": [""]}, "param keywords[0]: '' should be non-empty"),
        ({"seeds": [SEED], "allowed_hosts": ["a host"]}, "param allowed_hosts[0]: 'a host' is not a host"),
        ({"seeds": [SEED], "shards": 257}, "param shards: 257 is greater than the maximum of 256"),
        ({"seeds": [SEED], "shards": True}, "param shards: True is not of type 'integer'"),
        ({"seeds": [SEED], "per_host_delay": float("nan")}, "param per_host_delay"),
        (
            {"seeds": [SEED], "revisit_megabytes": -1},
            "param revisit_megabytes: -1 is less than the minimum of 0",
        ),
        (
            {"seeds": [SEED], "revisit_megabytes": 1e308},
            "param revisit_megabytes: 1e+308 is greater than the",
        ),
        (
            {"seeds": [SEED], "time_budget_hours": 0},
            "param time_budget_hours: 0 is less than or equal to the",
        ),
        (
            {"seeds": [SEED], "time_budget_hours": 1e308},
            "param time_budget_hours: 1e+308 is greater than the",
        ),
        (
            {"seeds": [SEED], "max_levels": 2},
            "unknown param(s) max_levels; known: seeds, allowed_hosts, max_level",
        ),
    ],
)
def test_bad_conf_is_refused_naming_the_key(conf, message):
    with pytest.raises(InvalidParams) as refused:
        HarvestParams.from_conf(conf)
    assert message in str(refused.value)


def test_url_policies_of_the_run_win_over_the_base_settings_and_are_checked_up_front():
    rules = '[{"pattern": "/calendar/", "action": "skip"}]'
    base = Settings(url_policies='[{"pattern": "x", "action": "fetch"}]')
    params = HarvestParams.from_conf({"seeds": [SEED], "url_policies": rules})
    assert params.settings(base).url_policies == rules
    # without the param, the base (GEOWEB_URL_POLICIES or the Airflow Variable) applies
    assert HarvestParams.from_conf({"seeds": [SEED]}).settings(base).url_policies == base.url_policies
    with pytest.raises(InvalidParams, match=r"param url_policies.*rule 1"):
        HarvestParams.from_conf({"seeds": [SEED], "url_policies": '[{"pattern": "(a+)+", "action": "skip"}]'})
    with pytest.raises(InvalidParams, match="param url_policies: not JSON"):
        HarvestParams.from_conf({"seeds": [SEED], "url_policies": "/etc/policies.json"})
