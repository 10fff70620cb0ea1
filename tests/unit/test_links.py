from urllib.parse import urljoin

import pytest

from geoweb.links.extract import extract_links
from geoweb.links.filters import HostBudget, URLFilters
from geoweb.links.normalize import normalize_url
from geoweb.settings import Settings


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM:80/a/./b/../c?x=1#frag", "http://example.com/a/c?x=1"),
        ("https://example.com:443", "https://example.com/"),
        ("https://example.com:8443/x/", "https://example.com:8443/x/"),
        ("http://user:secret@example.com/p", "http://example.com/p"),
        ("http://example.com/a/b/../../../c", "http://example.com/c"),
        ("http://example.com/dir/", "http://example.com/dir/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("ftp://example.com/file", None),
        ("mailto:someone@example.com", None),
        ("/relative/path", None),
        ("http://example.com:notaport/", None),
    ],
)
def test_normalize_url(raw, expected):
    assert normalize_url(raw) == expected


PAGE = """<!doctype html><html><head><base href="http://other.example/base/">
<link rel="alternate" href="feed.xml"></head><body>
<a href="wms?service=WMS&amp;request=GetCapabilities">caps</a>
<a href="javascript:void(0)">js</a> <a href="mailto:a@b.c">mail</a>
<map><area href="/area-target" shape="rect" coords="0,0,1,1"></map>
<iframe src="https://frames.example/inner"></iframe>
<p>Also at http://plain.example/ows?service=WFS&amp;request=GetCapabilities, and
http://plain.example/data.kml.</p>
<script>var u = "http://script.example/wmts?SERVICE=WMTS&REQUEST=GetCapabilities";</script>
</body></html>"""


def test_extract_links_covers_markup_text_and_scripts():
    links = [link.url for link in extract_links(PAGE, "http://site.example/page.html")]
    assert links == [
        "http://other.example/base/feed.xml",
        "http://other.example/base/wms?service=WMS&request=GetCapabilities",
        "javascript:void(0)",  # dropped later by the filter chain, with every other non-http scheme
        "mailto:a@b.c",
        "http://other.example/area-target",
        "https://frames.example/inner",
        "http://plain.example/ows?service=WFS&request=GetCapabilities",
        "http://plain.example/data.kml",
        "http://script.example/wmts?SERVICE=WMTS&REQUEST=GetCapabilities",
    ]


@pytest.mark.parametrize(
    ("base", "href", "expected"),
    [
        ("http://s.example/a/b.html", "/x?y=1", "http://s.example/x?y=1"),
        ("http://s.example", "/x", "http://s.example/x"),
        ("http://s.example?q=1", "/x", "http://s.example/x"),
        ("http://s.example#top", "/x", "http://s.example/x"),
        ("http://s.example:8080/a/", "//cdn.example/x", "http://cdn.example/x"),
        ("http://s.example/a/", "HTTPS://Other.example/", "HTTPS://Other.example/"),  # normalised later
        ("http://s.example/a/b", "c/../d", "http://s.example/a/d"),
    ],
)
def test_links_resolve_like_urljoin(base, href, expected):
    assert extract_links(f'<a href="{href}">x</a>', base) == [(expected, "x")]
    assert urljoin(base, href) == expected


def test_extract_links_without_base_resolves_against_page():
    assert extract_links('<a href="../x/y.html">y</a>', "http://s.example/a/b/c.html") == [
        ("http://s.example/a/x/y.html", "y")
    ]


@pytest.mark.parametrize(
    "hostile",
    [
        "",
        "   ",
        "\x00\x01\x02 binary \xff",
        "<a href=" * 10_000,
        '<?xml version="1.0" encoding="ISO-8859-1"?><html><a href="/ok">ok</a></html>',
        "<html>" + "<div>" * 20_000 + '<a href="/deep">x</a>',
    ],
)
def test_extract_links_survives_hostile_markup(hostile):
    links = extract_links(hostile, "http://s.example/")
    assert isinstance(links, list)
    if "/ok" in hostile:
        assert links == [("http://s.example/ok", "ok")]


def test_filter_chain_drops_documents_media_traps_and_long_urls():
    filters = URLFilters.from_settings(Settings(max_url_length=60))
    assert filters("HTTP://Example.com/Report.PDF") is None
    assert filters("http://example.com/photo.jpeg") is None
    assert filters("http://example.com/a/b/a/b/a/b/a/b/") is None
    assert filters("http://example.com/" + "x" * 80) is None
    assert filters("http://example.com/data/parks.kmz") == "http://example.com/data/parks.kmz"
    assert filters("http://example.com/ows?service=WMS") == "http://example.com/ows?service=WMS"
    assert filters.stats["filter/ignored_extension"] == 2
    assert filters.stats["filter/repeated_segments"] == 1
    assert filters.stats["filter/too_long"] == 1
    assert filters("HTTP://Example.com/Report.PDF") is None  # a repeat, answered from the memo
    assert filters.stats["filter/ignored_extension"] == 3
    steps = filters.trace("http://example.com/x.pdf")
    assert steps[-1] == ("IgnoredExtension", None)


def test_a_full_memo_forgets_its_oldest_quarter_and_answers_as_the_filters_do():
    chain = URLFilters.from_settings(Settings())
    filters = URLFilters(chain.filters, memo_size=8)
    urls = [f"HTTP://Example.com/{i}{'.pdf' if i % 3 == 0 else ''}" for i in range(20)]
    for _ in range(2):
        assert [filters(u) for u in urls] == [chain(u) for u in urls]
        assert len(filters._memo) <= 8
    assert filters.stats["filter/ignored_extension"] == 2 * 7  # a drop counts every time, memoised or not
    assert list(filters._memo)[-1] == urls[-1]  # the newest stay


def test_host_budget_counts_per_origin():
    budget = HostBudget(2)
    urls = [f"http://a.example/cal?month={i}" for i in range(5)]
    assert [budget(u) is not None for u in urls] == [True, True, False, False, False]
    assert budget("http://b.example/") == "http://b.example/"
    assert budget("http://a.example:8080/") == "http://a.example:8080/"
