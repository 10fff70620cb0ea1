"""The Brave Search API (``GET /res/v1/web/search``), as Brave documents and serves it.

The key comes in ``X-Subscription-Token``; ``count`` (at most 20) hits from page ``offset`` (0 to 9).
An answer is ``{"type": "search", "query": {..., "more_results_available"}, "mixed": ..., "web": {"results":
[...]}}``, with no ``web`` when nothing was found. Every answer carries the plan's rate windows (per second,
per month) in ``X-RateLimit-Limit/-Policy/-Remaining/-Reset``; a spent window answers 429 with
``{"type": "ErrorResponse", "error": {"code": "RATE_LIMITED"|"QUOTA_LIMITED", "detail", ...}}``.
"""

from __future__ import annotations

import math
import time
import uuid
from urllib.parse import urlsplit

from aiohttp import web

from tests.standins.server import Hit, Standin, bad_gateway, truncated_json

KEY = "BSA-standin-brave-token-0123456789"
MONTH = 2_592_000  # seconds in the monthly window
RATE_DETAIL = "Request rate limit exceeded for plan."
QUOTA_DETAIL = "Request quota limit exceeded for plan."


def error(status: int, code: str, detail: str, meta: dict, headers: dict | None = None) -> web.Response:
    body = {
        "type": "ErrorResponse",
        "error": {"id": str(uuid.uuid4()), "status": status, "code": code, "detail": detail, "meta": meta},
        "time": int(time.time()),
    }
    return web.json_response(body, status=status, headers=headers)


class BraveStandin(Standin):
    """``results`` maps a query to its hits; the plan allows ``per_second`` requests a second and
    ``per_month`` a month (``month_used`` so far). Faults: quota (the month spent), rate (the second spent),
    server (502), malformed."""

    path = "/res/v1/web/search"

    def __init__(self, per_second: int = 50, per_month: int = 20_000) -> None:
        super().__init__()
        self.results: dict[str, list[Hit]] = {}
        self.per_second = per_second
        self.per_month = per_month
        self.month_used = 0
        self.refused = 0  # requests answered 429 by the plan's limits
        self._window = (0, 0)  # (second, requests in it)

    def config(self, **settings: str) -> dict[str, str]:
        return {"url": self.url + "/res/v1", "key": KEY, **settings}

    def page_of(self, request: web.Request) -> int:
        offset = request.query.get("offset", "0")
        return int(offset) + 1 if offset.isdigit() else 0

    def fault(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "quota":
            headers = self._headers(second_left=1, month_left=0)
            return error(429, "QUOTA_LIMITED", QUOTA_DETAIL, {"component": "rate_limiter"}, headers)
        if kind == "rate":
            headers = self._headers(second_left=0, month_left=self.per_month - self.month_used)
            return error(429, "RATE_LIMITED", RATE_DETAIL, {"component": "rate_limiter"}, headers)
        return bad_gateway() if kind == "server" else truncated_json()

    async def answer(self, request: web.Request) -> web.StreamResponse:
        token = request.headers.get("X-Subscription-Token")
        if not token:
            return error(
                422,
                "VALIDATION",
                "Unable to validate request parameter(s)",
                {
                    "errors": [
                        {
                            "type": "missing",
                            "loc": ["header", "x-subscription-token"],
                            "msg": "Field required",
                            "input": None,
                        }
                    ]
                },
            )
        if token != KEY:
            return error(
                422,
                "SUBSCRIPTION_TOKEN_INVALID",
                "The provided subscription token is invalid.",
                {"component": "authentication"},
            )
        limited = self._spend()
        if limited is not None:
            return limited
        query, count, offset = (
            request.query.get("q", ""),
            request.query.get("count", "20"),
            request.query.get("offset", "0"),
        )
        for name, value, high in (("count", count, 20), ("offset", offset, 9)):
            if not value.isdigit() or int(value) > high:
                return error(
                    422,
                    "VALIDATION",
                    "Unable to validate request parameter(s)",
                    {
                        "errors": [
                            {
                                "type": "less_than_equal",
                                "loc": ["query", name],
                                "msg": f"Input should be less than or equal to {high}",
                                "input": value,
                            }
                        ]
                    },
                )
        if not query:
            return error(
                422,
                "VALIDATION",
                "Unable to validate request parameter(s)",
                {"errors": [{"type": "missing", "loc": ["query", "q"], "msg": "Field required"}]},
            )
        hits = self.results.get(query, [])
        first = int(offset) * int(count)
        page = hits[first : first + int(count)]
        more = first + int(count) < len(hits) and int(offset) < 9
        body: dict = {
            "type": "search",
            "query": {
                "original": query,
                "show_strict_warning": False,
                "is_navigational": False,
                "is_news_breaking": False,
                "spellcheck_off": True,
                "country": "us",
                "bad_results": False,
                "should_fallback": False,
                "postal_code": "",
                "city": "",
                "header_country": "",
                "more_results_available": more,
                "state": "",
            },
            "mixed": {
                "type": "mixed",
                "main": [{"type": "web", "index": i, "all": False} for i in range(len(page))],
                "top": [],
                "side": [],
            },
        }
        if page:
            body["web"] = {
                "type": "search",
                "results": [_result(hit) for hit in page],
                "family_friendly": True,
            }
        headers = self._headers(self.per_second - self._window[1], self.per_month - self.month_used)
        return web.json_response(body, headers=headers)

    def _spend(self) -> web.Response | None:
        """Count a request against the plan, or refuse it with the window it would overrun."""
        second = math.floor(time.monotonic())
        used = self._window[1] if self._window[0] == second else 0
        if self.month_used >= self.per_month:
            self.refused += 1
            return self.fault("quota", None)
        if used >= self.per_second:
            self.refused += 1
            return self.fault("rate", None)
        self._window = (second, used + 1)
        self.month_used += 1
        return None

    def _headers(self, second_left: int, month_left: int) -> dict[str, str]:
        until_next_second = max(1, math.ceil(math.floor(time.monotonic()) + 1 - time.monotonic()))
        return {
            "X-RateLimit-Limit": f"{self.per_second}, {self.per_month}",
            "X-RateLimit-Policy": f"{self.per_second};w=1, {self.per_month};w={MONTH}",
            "X-RateLimit-Remaining": f"{second_left}, {month_left}",
            "X-RateLimit-Reset": f"{until_next_second}, {MONTH - 86_400}",
        }


def _result(hit: Hit) -> dict:
    parts = urlsplit(hit.url)
    return {
        "title": hit.title,
        "url": hit.url,
        "is_source_local": False,
        "is_source_both": False,
        "description": hit.snippet,
        "page_age": "2025-06-01T00:00:00",
        "profile": {
            "name": parts.netloc,
            "url": hit.url,
            "long_name": parts.netloc,
            "img": "https://imgs.search.brave.com/favicon.png",
        },
        "language": "en",
        "family_friendly": True,
        "type": "search_result",
        "subtype": "generic",
        "is_live": False,
        "meta_url": {
            "scheme": parts.scheme,
            "netloc": parts.netloc,
            "hostname": parts.hostname,
            "favicon": "https://imgs.search.brave.com/favicon.png",
            "path": f"> {parts.path.strip('/')}",
        },
    }
