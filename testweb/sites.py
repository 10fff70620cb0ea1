"""Writes the web sites: HTML pages rendered from testweb/templates/page.html, and robots.txt."""

from __future__ import annotations

import json
from html import escape
from string import Template

from testweb import web
from testweb.layout import TEMPLATES, site_root

# A 1x1 image for image maps, inline so that it costs no request.
PIXEL = "data:image/gif;base64,R0lGODlhAQABAAAAACw="


def render_link(link: web.Link, number: int) -> str:
    """One link, written the way ``link.style`` says; attribute and text values are HTML-escaped."""
    href, label, text_href = escape(link.href), escape(link.label), escape(link.href, quote=False)
    if link.style == "anchor":
        return f'<p><a href="{href}">{label}</a></p>'
    if link.style == "text":
        return f"<p>{label}: {text_href}</p>"
    if link.style == "code":
        return f'<p>{label}:</p>\n<pre><code>curl "{text_href}"</code></pre>'
    if link.style == "script":  # script text is not HTML: no escaping, as pages write it
        return (
            f"<script>\n  var {link.label} = {json.dumps(link.href)};\n  loadLayer({link.label});\n</script>"
        )
    if link.style == "iframe":
        return f'<iframe src="{href}" title="{label}" width="640" height="400"></iframe>'
    if link.style == "area":
        return (
            f'<img src="{PIXEL}" alt="Index map" width="200" height="100" usemap="#map{number}">\n'
            f'<map name="map{number}"><area shape="rect" coords="0,0,200,100" href="{href}" alt="{label}"></map>'
        )
    raise ValueError(f"unknown link style {link.style!r}")


def render_page(site: web.Site, page: web.Page) -> str:
    return Template((TEMPLATES / "page.html").read_text()).substitute(
        title=escape(page.title),
        site=escape(site.name),
        base=f'<base href="{escape(page.base_href)}">' if page.base_href else "",
        intro=escape(page.intro),
        links="\n".join(render_link(link, i) for i, link in enumerate(page.links)),
    )


def write_sites() -> None:
    for site in web.SITES:
        root = site_root(site.port)
        root.mkdir(parents=True, exist_ok=True)
        for page in site.pages:
            target = root / page.path.lstrip("/")
            if page.path.endswith("/"):
                target = target / "index.html"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render_page(site, page))
        if site.robots is not None:
            (root / "robots.txt").write_text(site.robots)
