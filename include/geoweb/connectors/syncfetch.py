"""The crawl's fetcher for a connector that pages synchronously through a stranger's server (a CSW
catalogue): the address guard, size caps, retries and politeness of ``geoweb.fetch``, with its failures as
connector errors that name the source and the page."""

from __future__ import annotations

import asyncio

from geoweb.connectors.base import ConnectorError, QuotaExceeded
from geoweb.errors import FetchError
from geoweb.fetch.fetcher import Fetcher
from geoweb.fetch.response import Response
from geoweb.settings import Settings


class SyncFetcher:
    """The crawl's ``Fetcher`` for synchronous paging: one event loop and one connection pool for a whole
    harvest. ``get`` returns a complete 2xx answer or raises ConnectorError naming the source and the page."""

    def __init__(self, settings: Settings, source: str):
        self.settings = settings
        self.source = source
        self._runner = asyncio.Runner()
        self._fetcher = Fetcher(settings)

    def __enter__(self) -> SyncFetcher:
        self._runner.run(self._fetcher.__aenter__())
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            self._runner.run(self._fetcher.__aexit__(None, None, None))
        finally:
            self._runner.close()

    def get(self, url: str, what: str) -> Response:
        try:
            response = self._runner.run(self._fetcher.get(url, max_bytes=self.settings.max_xml_bytes))
        except FetchError as exc:
            raise ConnectorError(f"{self.source}: {what}: {exc.user_msg} ({exc.reason}: {exc})") from None
        if response.status in (403, 429):
            raise QuotaExceeded(f"{self.source}: {what}: refused with HTTP {response.status}")
        if response.status >= 400:
            raise ConnectorError(f"{self.source}: {what}: HTTP {response.status}")
        if not response.complete:
            raise ConnectorError(
                f"{self.source}: {what}: the answer was cut short (over {self.settings.max_xml_bytes} bytes, "
                "or the connection broke)"
            )
        return response
