"""Link extraction from HTML: markup links plus plain-text URLs, as the paper's crawler found them."""

from __future__ import annotations

import html
import re
from typing import NamedTuple
from urllib.parse import urljoin

from lxml import etree

# The paper's expression for URLs written as plain text (Huang & Chang 2016, section 3.2).
PLAIN_URL = re.compile(r"\b(?:https?)://[-a-zA-Z0-9+&@#/%?=~_|!:,.;]*[-a-zA-Z0-9+&@#/%=~_|]")

# element -> attribute holding a link
LINK_ATTRIBUTES = {"a": "href", "area": "href", "link": "href", "iframe": "src", "frame": "src"}

MAX_ANCHOR = 256  # characters of anchor text kept: real anchors are short, hostile ones are not
CONTEXT = 80  # characters of text before a plain-text URL taken as its anchor

_PARSER = etree.HTMLParser(recover=True, no_network=True, remove_comments=False, default_doctype=False)


class AnchoredURL(NamedTuple):
    url: str
    anchor: str


def _absolute(base: str, href: str) -> str:
    """``urljoin`` with fast paths for the common shapes: absolute URLs and root-relative paths."""
    if href.startswith(("http://", "https://")):
        return href
    if href.startswith("/") and not href.startswith("//") and "://" in base:
        authority_start = base.find("://") + 3
        authority_end = min(
            (i for i in map(lambda c: base.find(c, authority_start), "/?#") if i >= 0), default=len(base)
        )
        return base[:authority_end] + href
    return urljoin(base, href)


def _anchor_text(el) -> str:
    """What a page says about a link: title and alt attributes, its text and its children's (one level down,
    so that nested hostile markup costs linear time), whitespace collapsed, capped."""
    parts = [el.get("title") or "", el.get("alt") or "", el.text or ""]
    size = sum(map(len, parts))
    for child in el:
        if size >= MAX_ANCHOR:
            break
        more = (child.get("alt") or "", child.text or "", child.tail or "")
        parts += more
        size += sum(map(len, more))
    return " ".join(" ".join(parts).split())[:MAX_ANCHOR]


def extract_links(text: str, page_url: str) -> list[AnchoredURL]:
    """Absolute URLs linked from an HTML page with their anchor text, in document order, unfiltered and not
    yet normalised.

    ``<base href>`` changes the base for relative links. Plain-text URLs are taken from text and scripts;
    entities such as ``&amp;`` are decoded, so a URL copied from a page's text works; their anchor is the
    text just before them ("WMS endpoint: http://...").
    """
    if not text.strip():
        return []
    try:
        root = etree.fromstring(text, _PARSER)
    except ValueError:  # a str with an encoding declaration: let libxml2 read the bytes
        root = etree.fromstring(text.encode("utf-8"), _PARSER)
    except etree.ParserError:
        return []
    if root is None:
        return []
    base = None
    hrefs: list[tuple[str, str]] = []
    texts: list[str] = []
    for el in root.iter():
        tag = el.tag
        if isinstance(tag, str):
            if tag == "base":
                href = el.get("href")
                if href and base is None:  # the first <base> counts, as in browsers
                    base = urljoin(page_url, href.strip())
            else:
                attr = LINK_ATTRIBUTES.get(tag)
                if attr:
                    value = el.get(attr)
                    if value:
                        hrefs.append((value, _anchor_text(el)))
            if el.text and "://" in el.text:
                texts.append(el.text)
        if el.tail and "://" in el.tail:
            texts.append(el.tail)
    links = [AnchoredURL(_absolute(base or page_url, href.strip()), anchor) for href, anchor in hrefs]
    for chunk in texts:
        for match in PLAIN_URL.finditer(chunk):
            url = match.group()
            before = chunk[max(0, match.start() - CONTEXT) : match.start()]
            links.append(AnchoredURL(html.unescape(url) if "&" in url else url, before))
    return links
