"""A SearXNG instance's search (``GET /search?q=&format=json&pageno=``), as SearXNG serves it.

An answer is ``{"query", "number_of_results", "results": [{"url", "title", "content", "engine", "engines",
"score", ...}], "answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines"}``, ten hits a
page. With JSON off in settings.yml (``json_enabled=False``) the instance answers 403 with Flask's HTML page.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from tests.standins.server import Hit, Standin, bad_gateway, truncated_json

FORBIDDEN = """<!doctype html>
<html lang=en>
<title>403 Forbidden</title>
<h1>Forbidden</h1>
<p>You don&#39;t have the permission to access the requested resource. It is either read-protected or not readable by the server.</p>
"""
PAGE_SIZE = 10
BLOCKED_ENGINES = [["google", "Suspended: too many requests"], ["duckduckgo", "CAPTCHA"]]


class SearXNGStandin(Standin):
    """``results`` maps a query to its hits. Faults: quota (the instance's limiter: 429, plain text), blocked
    (200, no results, every engine unresponsive), server (502), malformed."""

    path = "/search"

    def __init__(self, json_enabled: bool = True) -> None:
        super().__init__()
        self.results: dict[str, list[Hit]] = {}
        self.json_enabled = json_enabled

    def config(self, **settings: str) -> dict[str, str]:
        return {"url": self.url, **settings}

    def page_of(self, request: web.Request) -> int:
        pageno = request.query.get("pageno", "1")
        return int(pageno) if pageno.isdigit() else 0

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            return web.Response(status=429, text="Too Many Requests")
        if kind == "blocked":
            return web.json_response(self._body(request.query.get("q", ""), [], BLOCKED_ENGINES))
        return bad_gateway() if kind == "server" else truncated_json()

    async def answer(self, request: web.Request) -> web.StreamResponse:
        output = request.query.get("format", "html")
        if output not in ("html", "json", "csv", "rss") or (output == "json" and not self.json_enabled):
            return web.Response(status=403, text=FORBIDDEN, content_type="text/html")
        if output != "json":
            return web.Response(text="<html><body>results</body></html>", content_type="text/html")
        query, page = request.query.get("q", ""), self.page_of(request)
        if not query or page < 1:
            return web.Response(status=400, text="Bad Request")
        hits = self.results.get(query, [])[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
        return web.json_response(self._body(query, hits, []))

    @staticmethod
    def _body(query: str, hits: list[Hit], unresponsive: list) -> dict:
        results = []
        for position, hit in enumerate(hits, 1):
            parts = urlsplit(hit.url)
            results.append(
                {
                    "url": hit.url,
                    "title": hit.title,
                    "content": hit.snippet,
                    "engine": "duckduckgo",
                    "parsed_url": [parts.scheme, parts.netloc, parts.path, "", parts.query, ""],
                    "template": "default.html",
                    "engines": ["duckduckgo", "brave"],
                    "positions": [position],
                    "score": round(2.0 / position, 3),
                    "category": "general",
                    "publishedDate": None,
                }
            )
        return {
            "query": query,
            "number_of_results": 0,
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": unresponsive,
        }
