"""What every connector shares: its configuration, its errors, and the interface (the records it yields are
``geoweb.models.Record``).

A connector reads one outside source (a web-search API, a data portal, a catalogue, an image archive) and
yields records. It is built from a plain config dict (base URL, key, page size, timeout...) that the DAGs
fill from Airflow Connections/Variables and the CLI from the environment; a key never appears in logs or
errors. Records whose links point at services or files go back to the crawl as candidates.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from geoweb.errors import GeowebError
from geoweb.models import Record


class ConnectorError(GeowebError):
    """Raised by a connector when its source fails: HTTP errors, quota, malformed answers. ``user_msg``
    says what went wrong in words a user can act on; the message never contains a key."""

    reason = "connector"
    user_msg = "The source could not be read"


class QuotaExceeded(ConnectorError):
    """Raised when a source refuses for quota or rate reasons (HTTP 403/429 and the providers' error bodies)."""

    reason = "quota"
    user_msg = "The source's quota or rate limit is exhausted"


class ConfigError(ConnectorError):
    """Raised when a connector's configuration lacks a setting or has a bad one (names the setting)."""

    reason = "config"
    user_msg = "The connector is not configured"


class Connector(ABC):
    """A source of records. Subclasses live one per module and register by short name in CONNECTORS."""

    name: ClassVar[str]
    required: ClassVar[tuple[str, ...]] = ()  # config keys that must be present

    def __init__(self, config: Mapping[str, Any]):
        missing = [key for key in self.required if not config.get(key)]
        if missing:
            raise ConfigError(f"{self.name}: missing setting(s) {', '.join(missing)}")
        self.config = dict(config)

    def number_setting(
        self, setting: str, kind: type[int] | type[float], default: Any, low: float, high: float | None = None
    ) -> Any:
        """The config's ``setting`` as a ``kind`` from ``low`` to ``high`` (numbers from the environment come
        as text); ``default`` when it is absent or empty. ConfigError names the connector and the setting."""
        raw = self.config.get(setting)
        if raw is None or raw == "":
            return default
        try:
            value = math.nan if isinstance(raw, bool) else kind(raw)
        except (TypeError, ValueError):
            value = math.nan
        if not math.isfinite(value):
            raise ConfigError(f"{self.name}: setting {setting} must be a number, not {raw!r}")
        if value < low or (high is not None and value > high):
            limit = f"{low} to {high}" if high is not None else f"at least {low}"
            raise ConfigError(f"{self.name}: setting {setting} must be {limit}, not {raw!r}")
        return value

    @abstractmethod
    def records(self, **query: Any) -> Iterator[Record]:
        """Yield the source's records for a query, page by page; raise ConnectorError on failure."""
