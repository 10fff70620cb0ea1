"""What the connectors to JSON web APIs share: their settings and one HTTP client.

Settings come as a config dict (the DAGs fill it from an Airflow Connection, the commands from
``GEOWEB_<NAME>_<SETTING>`` environment variables); defaults for timeouts, retries and the User-Agent come from
``geoweb.settings``. Keys travel in headers, never in URLs, and never appear in a log line or an error.
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar

import requests

from geoweb.connectors.base import ConfigError, Connector, ConnectorError, QuotaExceeded
from geoweb.fetch.fetcher import retry_after_seconds
from geoweb.settings import Settings
from geoweb.values import stripped

log = logging.getLogger("geoweb.connectors")

# Settings every API connector takes; a connector adds its own in ``options``.
COMMON = frozenset({"url", "key", "timeout", "retries", "page_size"})
DEFAULT_PAGES = 10  # result pages read for one query: the paper's top 10
MAX_MESSAGE = 300  # characters of a provider's error text kept in a message
_TAGS = re.compile(r"<[^>]*>")
_TITLE = re.compile(r"<title>([^<]*)</title>", re.I)
_SPACE = re.compile(r"\s+")


def config_from_env(name: str, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """A connector's settings from ``GEOWEB_<NAME>_<SETTING>`` variables, e.g. GEOWEB_GOOGLE_KEY -> key."""
    prefix = f"GEOWEB_{name.upper()}_"
    return {k[len(prefix) :].lower(): v for k, v in environ.items() if k.startswith(prefix) and v.strip()}


def malformed(source: str, what: str, reason: str) -> ConnectorError:
    """The error of an answer that is JSON but not in the API's documented shape."""
    return ConnectorError(f"{source}: {what}: malformed answer: {reason}")


def said(*values: Any) -> str | None:
    """What a source says of a link in several fields (a format and a media type), as one protocol text:
    ``"WMS; application/xml"``; None when it says nothing."""
    return "; ".join(dict.fromkeys(t for v in values if (t := stripped(v)))) or None


def http_url(value: Any) -> str | None:
    """A URL field of an answer when it is an absolute http(s) URL, else None."""
    return value if isinstance(value, str) and re.match(r"^https?://[^/?#\s]+", value, re.I) else None


def provider_message(body: bytes) -> str:
    """The error a provider put in an error answer's body (see ``error_text``), or the body's text."""
    try:
        return error_text(json.loads(body))
    except ValueError:
        text = body.decode("utf-8", "replace")
    title = _TITLE.search(text)  # an HTML error page says it in its title
    text = title.group(1) if title else _TAGS.sub(" ", text)
    return _SPACE.sub(" ", html.unescape(text)).strip()[:MAX_MESSAGE]


def error_text(body: Any) -> str:
    """The error of a JSON answer: ``{"error": {"code"|"status"|"__type", "message"|"detail"}}`` (Google,
    api.data.gov, Brave, CKAN) or Brave's documented ``{"errors": [...]}``, as ``CODE: message``."""
    error = body.get("error") if isinstance(body, dict) else None
    if error is None and isinstance(body, dict) and isinstance(body.get("errors"), list) and body["errors"]:
        error = body["errors"][0]
    if isinstance(error, dict):
        code = error.get("status") if isinstance(error.get("status"), str) else None
        code = code or error.get("code") or error.get("__type")
        text = error.get("message") or error.get("detail")
        if text is None:  # CKAN validation errors: one list of messages per field
            text = "; ".join(f"{k}: {v}" for k, v in error.items() if k not in ("code", "__type"))
        return f"{code}: {text}"[:MAX_MESSAGE] if code else str(text)[:MAX_MESSAGE]
    return str(error if error is not None else body)[:MAX_MESSAGE]


class JSONClient:
    """GETs JSON from one API politely: a timeout, retries with backoff on connection errors and 5xx, a wait
    before retrying a 429 (Retry-After, or what ``pace`` reads), and a pause before the next request whenever
    ``pace`` says a rate window is spent. Raises QuotaExceeded when the wait would exceed ``max_wait`` or the
    retries run out, ConfigError on other 4xx, ConnectorError otherwise; every message names the source and
    the page (``what``) and is scrubbed of ``secrets``."""

    def __init__(
        self,
        source: str,
        *,
        timeout: tuple[float, float],
        total_timeout: float,
        max_bytes: int,
        retries: int,
        backoff: float,
        max_wait: float,
        headers: Mapping[str, str],
        secrets: Collection[str] = (),
        quota_statuses: Collection[int] = (403, 429),
        hints: Mapping[int, str] | None = None,
        pace: Callable[[Mapping[str, str]], float | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.source = source
        self.timeout = timeout
        self.total_timeout = total_timeout
        self.max_bytes = max_bytes
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.secrets = [s for s in secrets if s]
        self.quota_statuses = frozenset(quota_statuses)
        self.hints = dict(hints or {})
        self.pace = pace or (lambda headers: retry_after_seconds(headers.get("Retry-After")))
        self.sleep = sleep
        self.session = requests.Session()
        self.session.headers.update(headers)
        self._not_before = 0.0

    def get(self, url: str, params: Mapping[str, Any], what: str) -> Any:
        """The decoded JSON of ``GET url?params``."""
        for attempt in range(self.retries + 1):
            self._wait_turn()
            try:
                status, headers, body = self._fetch(url, params, what)
            except requests.RequestException as exc:
                reason = f"no answer: {type(exc).__name__}: {exc}"[:MAX_MESSAGE]
                failure: ConnectorError = ConnectorError(self._say(what, reason))
                wait = self.backoff * 2**attempt
            else:
                wait = self._note_pace(headers)
                if status != 429 and status < 500:
                    return self._decode(status, body, what)
                failure = self._refusal(status, body, what)
                if status == 429 and wait is not None and wait > self.max_wait:
                    raise failure
                if wait is None:
                    wait = self.backoff * 2**attempt
            if attempt < self.retries:
                log.warning("%s; retrying in %.1f s", failure, wait)
                self.sleep(wait)
        raise failure

    def _fetch(self, url: str, params: Mapping[str, Any], what: str) -> tuple[int, Mapping[str, str], bytes]:
        """Status, headers and body, read up to ``max_bytes`` within ``total_timeout`` seconds."""
        started = time.monotonic()
        with self.session.get(url, params=params, timeout=self.timeout, stream=True) as response:
            body = bytearray()
            for chunk in response.iter_content(65_536):
                body += chunk
                if len(body) > self.max_bytes:
                    raise ConnectorError(self._say(what, f"the answer is larger than {self.max_bytes} bytes"))
                if time.monotonic() - started > self.total_timeout:
                    raise ConnectorError(self._say(what, f"the answer took over {self.total_timeout:g} s"))
            return response.status_code, response.headers, bytes(body)

    def _wait_turn(self) -> None:
        pause = self._not_before - time.monotonic()
        if pause > 0:
            log.info("%s: rate limit window spent; waiting %.1f s", self.source, pause)
            self.sleep(pause)

    def _note_pace(self, headers: Mapping[str, str]) -> float | None:
        """The provider's wait before the next request, remembered when it is short enough to honour."""
        wait = self.pace(headers)
        if wait is not None and wait <= self.max_wait:
            self._not_before = time.monotonic() + wait
        return wait

    def _decode(self, status: int, body: bytes, what: str) -> Any:
        if status >= 400:
            raise self._refusal(status, body, what)
        try:
            return json.loads(body)
        except ValueError as exc:
            raise ConnectorError(self._say(what, f"the answer is not JSON ({exc})")) from None

    def _refusal(self, status: int, body: bytes, what: str) -> ConnectorError:
        text = f"HTTP {status}"
        message = provider_message(body).removeprefix(str(status)).strip()
        if message:
            text += f" {message}"
        if status in self.hints:
            text += f" ({self.hints[status]})"
        if status in self.quota_statuses:
            return QuotaExceeded(self._say(what, text))
        # a server error may pass; any other refusal means the request or its settings are wrong
        return (ConnectorError if status >= 500 else ConfigError)(self._say(what, text))

    def _say(self, what: str, text: str) -> str:
        message = f"{self.source}: {what}: {text}"
        for secret in self.secrets:
            message = message.replace(secret, "***")
        return message


class APIConnector(Connector):
    """A connector reading one JSON web API. ``self.client`` is its JSONClient and ``self.base_url`` its base
    URL, from the config's ``url`` or the class's public ``url``."""

    url: ClassVar[str | None] = None  # the public API; None when every user runs their own (url required)
    key_header: ClassVar[str | None] = None  # the header that carries ``key``
    options: ClassVar[frozenset[str]] = frozenset()  # settings of this connector beyond COMMON
    page_size: ClassVar[int] = 10
    max_page_size: ClassVar[int | None] = None  # the API's own limit

    def __init__(self, config: Mapping[str, Any], *, sleep: Callable[[float], None] = time.sleep):
        super().__init__(config)
        unknown = sorted(set(self.config) - COMMON - self.options)
        if unknown:
            known = ", ".join(sorted(COMMON | self.options))
            raise ConfigError(f"{self.name}: unknown setting(s) {', '.join(unknown)}; known: {known}")
        self.base_url = str(self.config.get("url") or self.url or "").rstrip("/")
        if http_url(self.base_url) is None:
            raise ConfigError(
                f"{self.name}: setting url must be an http(s) URL (GEOWEB_{self.name.upper()}_URL)"
            )
        self.page_size = self.number_setting("page_size", int, self.page_size, 1, self.max_page_size)
        defaults = Settings.from_env()
        headers = {"User-Agent": defaults.user_agent, "Accept": "application/json"}
        key = str(self.config.get("key") or "").strip()
        if not key.isprintable():  # requests would refuse the header, quoting the key in its message
            raise ConfigError(f"{self.name}: setting key holds characters a header cannot carry")
        if key and self.key_header:
            headers[self.key_header] = key
        self.client = self.make_client(
            timeout=(
                defaults.connect_timeout,
                self.number_setting("timeout", float, defaults.read_timeout, 0.001),
            ),
            total_timeout=defaults.total_timeout,
            max_bytes=defaults.max_body_bytes,
            retries=self.number_setting("retries", int, defaults.retries, 0, 10),
            backoff=defaults.retry_backoff,
            max_wait=defaults.max_retry_after,
            headers=headers,
            secrets=[str(key)] if key else [],
            sleep=sleep,
        )

    @property
    def source(self) -> str:
        """The source of its Records, and the name its messages start with."""
        return self.name

    def make_client(self, **options: Any) -> JSONClient:
        """The connector's JSONClient; a connector whose API reports errors or limits its own way adds
        ``quota_statuses``, ``hints`` or ``pace`` here."""
        return JSONClient(self.source, **options)
