"""Settings are validated when they are made: from the environment the error names the variable."""

from __future__ import annotations

import pytest

from geoweb.errors import SettingsError
from geoweb.settings import Settings


def test_the_defaults_and_every_documented_off_switch_are_valid():
    Settings()
    Settings(host_time_budget=0, host_max_failures=0, level_deadline=0, describe_feature_types=0, retries=0,
             per_host_delay=0, link_min_score=float("-inf"), validation_nice=-5)  # fmt: skip


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("GEOWEB_LINK_BUDGET", "2", "GEOWEB_LINK_BUDGET: a link budget is a fraction in (0, 1], not 2.0"),
        ("GEOWEB_CONCURRENCY", "lots", "GEOWEB_CONCURRENCY: not a whole number: 'lots'"),
        ("GEOWEB_CONCURRENCY", "0", "GEOWEB_CONCURRENCY: must be greater than 0, not 0"),
        ("GEOWEB_RETRIES", "-1", "GEOWEB_RETRIES: must be at least 0, not -1"),
        ("GEOWEB_TOTAL_TIMEOUT", "inf", "GEOWEB_TOTAL_TIMEOUT: must be greater than 0, not inf"),
        ("GEOWEB_OBEY_ROBOTS", "maybe", "GEOWEB_OBEY_ROBOTS: not a yes/no value: 'maybe'"),
        (
            "GEOWEB_BLOOM_ERROR_RATE",
            "1",
            "GEOWEB_BLOOM_ERROR_RATE: a false-positive rate is a fraction in (0, 1)",
        ),
    ],
)
def test_a_bad_environment_variable_is_refused_by_its_name(variable, raw, message):
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({variable: raw})
    assert str(raised.value).startswith(message)


def test_environment_values_are_read_by_the_defaults_types_and_overrides_win():
    settings = Settings.from_env(
        {"GEOWEB_OBEY_ROBOTS": "off", "GEOWEB_ALLOWED_HOSTS": "A.example, b.example:8080,", "GEOWEB_RETRIES": "7",
         "GEOWEB_CONCURRENCY": "not read: overridden"},
        concurrency=3,
    )  # fmt: skip
    assert settings.obey_robots is False
    assert settings.allowed_hosts == frozenset({"a.example", "b.example:8080"})
    assert (settings.retries, settings.concurrency) == (7, 3)


def test_a_changed_copy_is_validated_too():
    with pytest.raises(SettingsError, match="setting link_budget: a link budget is a fraction in"):
        Settings().with_(link_budget=0.0)
