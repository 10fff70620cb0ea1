"""The ``page_states`` table read brief (``PageStatesTable.briefs``): what deciding to carry a page over in SQL
needs, the links and resources left in the database."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from geoweb.crawl.pagestates import READERS, PageState, due_anyway, page_state, revisit_key, state_values


def test_a_brief_state_decides_as_the_whole_one(store):
    crawl = f"crawl-{uuid.uuid4().hex[:8]}"
    admitted = {"level": 2, "by": "admission", "links": [["http://a.example/next", 0.25]]}
    whole = {
        "http://a.example/read": PageState(
            etag='"e"', signature="s", links=[("http://a.example/next", "next")], read_at=1e9, visits=3,
            changes=1, visited_at=1.5e9, visit_seconds=8e5, level=2, size=1234, readers=READERS, admitted=admitted,
        ),
        "http://a.example/kml": PageState(resources=[{"url": "http://a.example/a.kml", "type": "KML"}], level=3),
        "http://a.example/gone": PageState(gone_runs=1, readers="other code"),
    }  # fmt: skip
    store.page_states.save(crawl, whole)
    briefs = store.page_states.briefs(crawl, [*whole, "http://a.example/unknown"])
    assert set(briefs) == set(whole)
    now = 1.6e9
    for url, state in whole.items():
        brief = briefs[url]
        assert brief.state.links == [] and brief.state.resources == [] and brief.state.admitted is None
        assert brief.state.size == state.size and brief.state.readers == state.readers
        assert revisit_key(url, brief.state, now) == revisit_key(url, state, now)
        assert due_anyway(brief.state, now) == due_anyway(state, now)
    assert [
        (briefs[url].resources, briefs[url].admitted_level, briefs[url].admitted_by) for url in whole
    ] == [
        (False, 2, "admission"),
        (True, None, None),
        (False, None, None),
    ]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"visits": "many"}, "'visits' is 'many'"),
        ({"read_at": None}, "'read_at' is None"),
        ({"links": [["http://a.example/"]]}, "a link is not a pair of texts"),
        ({"links": [[5, "text"]]}, "a link is not a pair of texts"),
        ({"admitted": {"level": 1, "by": "x", "links": [["http://a.example/", "high"]]}}, "admitted links"),
        ({"admitted": {"level": "1", "by": "x", "links": []}}, "admitted links"),
        ({"admitted": {"by": "x", "links": []}}, "admitted links"),
        ({"no_such_field": 1}, "no field 'no_such_field'"),
    ],
)
def test_a_damaged_state_is_refused_naming_what_is_wrong(values, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        page_state(values)


def test_a_sound_state_with_every_field_set_reads_back_as_it_was():
    state = PageState(
        etag='"e"', last_modified="Tue, 01 Dec 2026 00:00:00 GMT", signature="s",
        links=[("http://a.example/next", "next")], resources=[{"url": "http://a.example/a.kml", "type": "KML"}],
        read_at=1e9, visits=3, changes=1, visited_at=1.5e9, visit_seconds=8e5, level=2, size=1234, gone_runs=1,
        readers=READERS, admitted={"level": 2, "by": "admission", "links": [["http://a.example/next", 0.25]]},
    )  # fmt: skip
    assert page_state(json.loads(json.dumps(state_values(state)))) == state
