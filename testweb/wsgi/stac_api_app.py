"""stac-fastapi-static as an ASGI app for uvicorn; its catalog is named by ``catalog_href``, and requests are
logged in Combined Log Format to the file named by ``STAC_API_ACCESS_LOG``, as every server of the test web
logs them (uvicorn's own access log has no User-Agent).

stac-fastapi 5.2 hands its CORS settings to starlette's CORSMiddleware by position, and starlette 1.x put a
new parameter (allow_private_network) in the middle, so every request failed with a TypeError. The app is
built with starlette's own CORSMiddleware, which stac-fastapi-static already configures by keyword.
"""

import os
import time

from stac_fastapi.static.api import Settings, api, make_api
from starlette.middleware.cors import CORSMiddleware

api.CORSMiddleware = CORSMiddleware
stac_app = make_api(Settings()).app
ACCESS_LOG = open(os.environ["STAC_API_ACCESS_LOG"], "a", buffering=1)  # noqa: SIM115  (open while serving)


async def app(scope, receive, send):
    """The STAC API, each HTTP request logged once its response is sent."""
    if scope["type"] != "http":
        return await stac_app(scope, receive, send)
    answer = {"status": 0, "bytes": 0}

    async def logged_send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
        elif message["type"] == "http.response.body":
            answer["bytes"] += len(message.get("body", b""))
        await send(message)

    try:
        await stac_app(scope, receive, logged_send)
    finally:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        target = scope["path"] + (
            "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
        )
        when = time.strftime("%d/%b/%Y:%H:%M:%S %z")
        ACCESS_LOG.write(
            f'{scope["client"][0]} - - [{when}] "{scope["method"]} {target} HTTP/{scope["http_version"]}" '
            f'{answer["status"]} {answer["bytes"]} "{headers.get("referer", "-")}" '
            f'"{headers.get("user-agent", "-")}"\n'
        )
