"""URL-pattern policies: parsing, first-match-wins matching, refused rules named in the error, the crawl's URL
filter and its trace in ``geoweb filter``."""

from __future__ import annotations

import json
import time

import pytest

from geoweb.cli import main
from geoweb.links.filters import URLFilters, URLPolicyFilter
from geoweb.policy import (
    MAX_CHARACTERS,
    MAX_PATTERN,
    MAX_RULES,
    InvalidPolicy,
    URLPolicies,
    nested_quantifier,
)
from geoweb.settings import Settings

RULES = [
    {"pattern": r"^https?://tiles\.example\.org/", "action": "skip"},
    {"pattern": r"[?&]map=landcover", "action": "fetch", "revisit_hours": 6},
    {"pattern": r"\.example\.org/", "action": "fetch"},
    {"pattern": r"^https?://example\.org/", "action": "skip"},
]


def policies(rules=RULES) -> URLPolicies:
    return URLPolicies.from_json(json.dumps(rules), "test")


def test_first_matching_rule_wins():
    found = policies()
    assert found.match("http://tiles.example.org/wms").number == 1
    assert found.match("http://maps.example.org/cgi?map=landcover").revisit_seconds == 6 * 3600
    assert found.match("http://tiles.example.org/x?map=landcover").skips  # rule 1 comes first
    rule3 = found.match("https://maps.example.org/a")
    assert (rule3.number, rule3.action, rule3.revisit_seconds) == (3, "fetch", None)
    assert found.match("http://example.org/").number == 4
    assert found.match("http://other.net/") is None


def test_setting_takes_json_text_or_a_file(tmp_path):
    text = json.dumps(RULES)
    path = tmp_path / "policies.json"
    path.write_text(text, encoding="utf-8")
    assert len(URLPolicies.from_setting(text)) == len(URLPolicies.from_setting(str(path))) == 4
    assert not URLPolicies.from_setting("  ")
    with pytest.raises(InvalidPolicy, match=r"cannot read the URL policy file .*missing\.json"):
        URLPolicies.from_setting(str(tmp_path / "missing.json"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "test: not JSON"),
        ('{"pattern": "x"}', "expected a JSON list of rules, not dict"),
        ('["x"]', "rule 1: expected an object, not str"),
        (
            '[{"pattern": "a", "action": "fetch"}, {"pattern": "b", "action": "get"}]',
            r"rule 2 \('b'\): 'action'",
        ),
        ('[{"pattern": "", "action": "skip"}]', "rule 1: 'pattern' must be a non-empty string"),
        ('[{"pattern": 3, "action": "skip"}]', "rule 1: 'pattern' must be a non-empty string"),
        (
            '[{"pattern": "(unclosed", "action": "skip"}]',
            r"rule 1 \('\(unclosed'\): not a regular expression",
        ),
        ('[{"pattern": "(a+)+$", "action": "skip"}]', "quantified group holds a quantifier"),
        ('[{"pattern": "a", "action": "skip", "revisit_hours": 2}]', "'revisit_hours' needs action fetch"),
        (
            '[{"pattern": "a", "action": "fetch", "revisit_hours": 0}]',
            "'revisit_hours' must be a number above 0",
        ),
        ('[{"pattern": "a", "action": "fetch", "revisit_hours": "6"}]', "'revisit_hours' must be a number"),
        ('[{"pattern": "a", "action": "fetch", "revisit_hours": true}]', "'revisit_hours' must be a number"),
        ('[{"pattern": "a", "action": "fetch", "revisit_hours": 1e400}]', "'revisit_hours' must be a number"),
        ('[{"pattern": "a", "action": "fetch", "every": 1}]', "rule 1: unknown key\\(s\\) every"),
        ("[" + "[" * 100_000 + "]" * 100_000 + "]", "test: not JSON|rule 1: expected an object"),
    ],
)
def test_bad_rules_are_refused_naming_the_rule(text, message):
    with pytest.raises(InvalidPolicy, match=message):
        URLPolicies.from_json(text, "test")


def test_size_limits(tmp_path):
    huge = tmp_path / "huge.json"
    huge.write_text("[" + " " * MAX_CHARACTERS + "]", encoding="utf-8")
    with pytest.raises(InvalidPolicy, match=f"huge.json: more than {MAX_CHARACTERS} characters"):
        URLPolicies.from_setting(str(huge))
    with pytest.raises(InvalidPolicy, match=f"at most {MAX_PATTERN}"):
        policies([{"pattern": "a" * (MAX_PATTERN + 1), "action": "skip"}])
    with pytest.raises(InvalidPolicy, match=f"at most {MAX_RULES}"):
        policies([{"pattern": "a", "action": "skip"}] * (MAX_RULES + 1))


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("(a+)+", True),
        ("(.*)*x", True),
        (r"(\d+)+$", True),
        ("(a|b*){2,}", True),
        ("((ab)*c)+", True),
        (r"^https?://x\.org/(tiles|wmts)/", False),
        ("(ab){2}", False),
        ("(?:a|b)+", False),
        (r"[(]+x\(+", False),  # brackets in a class and escaped are no groups
        (r"(a+)?b", False),  # an optional group repeats at most once
    ],
)
def test_nested_quantifiers_are_found(pattern, nested):
    assert nested_quantifier(pattern) is nested


def test_accepted_patterns_match_long_hostile_urls_fast():
    found = policies([{"pattern": r"^https?://[a-z.]*example\.org/(\w+/)?tiles", "action": "skip"}])
    url = "http://" + "a" * 2000 + "!"
    started = time.perf_counter()
    assert found.match(url) is None
    assert time.perf_counter() - started < 0.1


def test_the_crawl_filter_drops_skipped_urls_and_counts_them():
    settings = Settings(url_policies=json.dumps(RULES))
    filters = URLFilters.from_settings(settings)
    assert any(isinstance(f, URLPolicyFilter) for f in filters.filters)
    assert filters("HTTP://Tiles.Example.org/wms") is None  # matched after normalisation
    assert filters("http://maps.example.org/wms") == "http://maps.example.org/wms"
    assert filters.stats["filter/url_policy"] == 1


def test_a_bad_policy_setting_fails_building_the_filters():
    with pytest.raises(InvalidPolicy, match="rule 1"):
        URLFilters.from_settings(Settings(url_policies='[{"pattern": "(", "action": "skip"}]'))


def test_geoweb_filter_shows_which_policy_decided(tmp_path, monkeypatch, capsys):
    path = tmp_path / "policies.json"
    path.write_text(json.dumps(RULES), encoding="utf-8")
    monkeypatch.setenv("GEOWEB_URL_POLICIES", str(path))
    assert main(["filter", "http://tiles.example.org/a", "http://other.net/"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[5].split() == [
        "URLPolicyFilter", "(rule", "1", r"'^https?://tiles\\.example\\.org/'", "->", "skip)", "DROPPED"
    ]  # fmt: skip
    assert out[-1].split() == ["URLPolicyFilter", "(no", "rule", "matches)", "http://other.net/"]


def test_a_bad_policy_file_ends_geoweb_filter_and_revisit_with_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "bad.json"
    path.write_text('[{"pattern": "(x+)*", "action": "skip"}]', encoding="utf-8")
    monkeypatch.setenv("GEOWEB_URL_POLICIES", str(path))
    monkeypatch.delenv("GEOWEB_DB", raising=False)  # refused before the database is needed
    assert main(["filter", "http://a.example/"]) == 1
    assert main(["revisit"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err] == ["geoweb filter", "geoweb revisit"]
    assert all(line.endswith("rule 1 ('(x+)*'): a quantified group holds a quantifier, which can backtrack for ever")
               for line in err)  # fmt: skip
