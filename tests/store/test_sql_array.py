"""``sql_array``: values sent to PostgreSQL as one array literal come back as they were."""

from geoweb.store.repository import sql_array
from tests.store.queries import rows

AWKWARD = [
    "http://a.example/p?q=1,2&r={x}",
    'say "hi"',
    "back\\slash\\",
    "'quoted'",
    "NULL",
    "",
    " spaced ",
    "tab\tand\nnewline",
    "ümlaut ✓ 中文",
    '\\"{},',
]


def test_text_comes_back_as_it_was_null_included(store):
    values = [*AWKWARD, None]
    assert rows(store, "SELECT unnest(%s::text[])", sql_array(values)) == [(v,) for v in values]


def test_numbers_and_booleans_come_back_as_they_were(store):
    keys = [-(2**63), 2**63 - 1, 0, 42]
    assert rows(store, "SELECT unnest(%s::bigint[])", sql_array(keys)) == [(k,) for k in keys]
    assert rows(store, "SELECT unnest(%s::boolean[])", sql_array([True, False, None])) == [
        (True,),
        (False,),
        (None,),
    ]


def test_an_empty_array_is_empty(store):
    assert rows(store, "SELECT cardinality(%s::text[])", sql_array([])) == [(0,)]
