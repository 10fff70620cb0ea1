"""The Google Custom Search JSON API (``GET /customsearch/v1``), as Google documents and serves it.

The key comes as ``key=`` or in the ``X-goog-api-key`` header; ``cx`` names the engine; ``start`` (from 1)
and ``num`` (1 to 10) page the results, never past the 100th. An answer has ``queries.request`` and, when
more results follow, ``queries.nextPage``; ``items`` is left out when there are none. Errors are
``{"error": {"code", "message", "errors": [...], "status"}}``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from tests.standins.server import Hit, Standin, truncated_json

KEY = "AIzaSy-standin-google-key-0123456789"
CX = "017576662512468239146:omuauf_lfve"
QUOTA_MESSAGE = (
    "Quota exceeded for quota metric 'Queries' and limit 'Queries per day' of service "
    "'customsearch.googleapis.com' for consumer 'project_number:123456789012'."
)
RATE_MESSAGE = QUOTA_MESSAGE.replace("Queries per day", "Queries per minute")
CLOSED_MESSAGE = "This project does not have the access to Custom Search JSON API."
INVALID_ARGUMENT = "Request contains an invalid argument."


def error(code: int, status: str, message: str, reason: str) -> web.Response:
    body = {
        "error": {
            "code": code,
            "message": message,
            "errors": [{"message": message, "domain": "global", "reason": reason}],
            "status": status,
        }
    }
    return web.json_response(body, status=code)


class GoogleStandin(Standin):
    """``results`` maps a query to its hits. Faults: quota (the daily quota, 429), rate (the per-minute limit,
    429), closed (403, the API closed to the project), server (500), malformed."""

    path = "/customsearch/v1"

    def __init__(self) -> None:
        super().__init__()
        self.results: dict[str, list[Hit]] = {}

    def config(self, **settings: str) -> dict[str, str]:
        return {"url": self.url + self.path, "key": KEY, "cx": CX, **settings}

    def page_of(self, request: web.Request) -> int:
        start, num = self._start_num(request)
        return (start - 1) // num + 1 if start and num else 0

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            return error(429, "RESOURCE_EXHAUSTED", QUOTA_MESSAGE, "rateLimitExceeded")
        if kind == "rate":
            return error(429, "RESOURCE_EXHAUSTED", RATE_MESSAGE, "rateLimitExceeded")
        if kind == "closed":
            return error(403, "PERMISSION_DENIED", CLOSED_MESSAGE, "forbidden")
        if kind == "server":
            return error(500, "INTERNAL", "Internal error encountered.", "backendError")
        return truncated_json()

    async def answer(self, request: web.Request) -> web.StreamResponse:
        key = request.headers.get("X-goog-api-key") or request.query.get("key")
        if not key:
            return error(
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without "
                "established identity). Please use API Key or other form of API consumer identity to call "
                "this API.",
                "forbidden",
            )
        if key != KEY:
            return error(
                400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "badRequest"
            )
        query = request.query.get("q")
        start, num = self._start_num(request)
        if (
            not query
            or request.query.get("cx") != CX
            or not start
            or not 1 <= num <= 10
            or start + num - 1 > 100
        ):
            return error(400, "INVALID_ARGUMENT", INVALID_ARGUMENT, "badRequest")
        hits = self.results.get(query, [])
        total = min(len(hits), 100)
        page = hits[start - 1 : start - 1 + num]
        request_info = {
            "title": f"Google Custom Search - {query}",
            "totalResults": str(len(hits)),
            "searchTerms": query,
            "count": num,
            "startIndex": start,
            "inputEncoding": "utf8",
            "outputEncoding": "utf8",
            "safe": "off",
            "cx": CX,
        }
        queries: dict = {"request": [request_info]}
        if start + num <= total:
            queries["nextPage"] = [{**request_info, "startIndex": start + num}]
        if start > 1:
            queries["previousPage"] = [{**request_info, "startIndex": max(1, start - num)}]
        body: dict = {
            "kind": "customsearch#search",
            "url": {
                "type": "application/json",
                "template": "https://www.googleapis.com/customsearch/v1?q={searchTerms}&num={count?}&"
                "start={startIndex?}&cx={cx?}&alt=json",
            },
            "queries": queries,
            "context": {"title": "GeoWeb"},
            "searchInformation": {
                "searchTime": 0.21,
                "formattedSearchTime": "0.21",
                "totalResults": str(len(hits)),
                "formattedTotalResults": f"{len(hits):,}",
            },
        }
        if page:
            body["items"] = [_item(hit) for hit in page]
        return web.json_response(body)

    @staticmethod
    def _start_num(request: web.Request) -> tuple[int, int]:
        try:
            return int(request.query.get("start", "1")), int(request.query.get("num", "10"))
        except ValueError:
            return 0, 0


def _item(hit: Hit) -> dict:
    host = urlsplit(hit.url).netloc
    item = {
        "kind": "customsearch#result",
        "title": hit.title,
        "htmlTitle": f"<b>{hit.title}</b>",
        "link": hit.url,
        "displayLink": host,
        "snippet": hit.snippet,
        "htmlSnippet": hit.snippet,
        "formattedUrl": hit.url,
        "htmlFormattedUrl": hit.url,
    }
    if hit.media_type:  # Google names the media type and the format of files it indexed
        item |= {"mime": hit.media_type, "fileFormat": "Google Earth"}
    return item
