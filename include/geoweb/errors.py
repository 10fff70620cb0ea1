"""Exceptions raised by the library.

Each carries a short ``user_msg`` safe to show to users (no secrets, no stack) and a ``reason`` code that is
stored as data with the failed URL, so one bad server never stops a crawl.
"""


class GeowebError(Exception):
    """Base class. ``reason`` is a stable short code counted in crawl statistics."""

    reason = "error"
    user_msg = "GeoWeb Harvester failed"

    def __init__(self, message: str | None = None, *, url: str | None = None):
        self.url = url
        super().__init__(message or self.user_msg)


class SettingsError(GeowebError, ValueError):
    """Raised for a setting out of its range or unreadable; the message names the setting (its environment
    variable when it came from there)."""

    reason = "settings"
    user_msg = "A setting is invalid"


class FetchError(GeowebError):
    """Raised by the fetcher when a URL cannot be fetched safely."""

    reason = "fetch"
    user_msg = "The URL could not be fetched"


class InvalidURL(FetchError):
    """Raised by the fetcher for a URL (or redirect target) that is not absolute http(s)."""

    reason = "invalid_url"
    user_msg = "The URL is not a valid http(s) URL"


class BadResponse(FetchError):
    """Raised by the fetcher when the server's answer is not valid HTTP."""

    reason = "bad_response"
    user_msg = "The server sent a malformed HTTP response"


class BlockedAddress(FetchError):
    """Raised by the address guard: the host resolves to a private, loopback, link-local or metadata address."""

    reason = "blocked_address"
    user_msg = "The host resolves to an address that may not be fetched"


class RobotsDisallowed(FetchError):
    """Raised by the fetcher when robots.txt disallows the URL for our User-Agent."""

    reason = "robots_disallowed"
    user_msg = "robots.txt disallows this URL"


class TooManyRedirects(FetchError):
    """Raised by the fetcher when a redirect chain is longer than the limit or loops."""

    reason = "redirects"
    user_msg = "Too many redirects, or a redirect loop"


class FetchTimeout(FetchError):
    """Raised by the fetcher when connect, read or total time runs out."""

    reason = "timeout"
    user_msg = "The server did not answer in time"


class HTTPStatusError(FetchError):
    """Raised by the fetcher on a final 4xx/5xx status after retries."""

    reason = "http_status"
    user_msg = "The server answered with an error status"

    def __init__(self, status: int, *, url: str | None = None):
        self.status = status
        super().__init__(f"HTTP {status}", url=url)


class RangeNotHonoured(FetchError):
    """Raised by detectors reading part of a file when a server answers a Range request with the whole body
    or with the wrong bytes."""

    reason = "range_unsupported"
    user_msg = "The server does not support HTTP Range requests"


class ConnectionFailed(FetchError):
    """Raised by the fetcher when no connection could be made after retries."""

    reason = "connection"
    user_msg = "The server could not be reached"


class UnsafeContent(GeowebError):
    """Raised by parsers for hostile content: entity expansion, DTDs, zip bombs, oversized members."""

    reason = "unsafe_content"
    user_msg = "The document was rejected as unsafe"


class MalformedContent(GeowebError):
    """Raised by parsers when a document cannot be parsed."""

    reason = "malformed"
    user_msg = "The document could not be parsed"


class StoreError(GeowebError):
    """Raised by the store for a missing setting, an unreachable database or an unknown run."""

    reason = "store"
    user_msg = "The harvest database could not be used"


class MigrationError(StoreError):
    """Raised by ``apply_migrations`` when a migration fails; its transaction is rolled back."""

    reason = "migration"
    user_msg = "A database migration failed"


class LeaseStoreUnavailable(FetchError):
    """Raised by the fetcher when the shared host leases (``host_leases``) cannot be reached: the request is
    not sent, since without its lease it could exceed the host's politeness across the deployment."""

    reason = "lease_store"
    user_msg = "The shared politeness store could not be reached"


class UnreadableState(GeowebError):
    """Raised for a crawl's state file (``geoweb crawl --state``) it cannot read: truncated, corrupt, not a
    state, or of a version it does not know. The file is left as it is; the message names it and what to
    do."""

    reason = "state"
    user_msg = "The crawl's state file cannot be read"
