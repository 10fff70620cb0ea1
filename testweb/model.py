"""The ground-truth vocabulary: what is planted in the test web, and how its URLs are keyed."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

OWS_PARAMS = frozenset({"service", "request", "version"})
# Requests to the test web go straight to 127.0.0.1, whatever proxy the environment names.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def canonical(url: str) -> str:
    """The endpoint of a URL: without its service/request/version parameters (other parameters kept)."""
    parts = urlsplit(url)
    kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in OWS_PARAMS]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(kept, safe="/:"), ""))


def with_query(url: str, query: str) -> str:
    """``url`` with ``query`` appended to its own parameters, if it has any."""
    return f"{url}{'&' if '?' in url else '?'}{query}"


@dataclass(frozen=True)
class Planted:
    """One planted service endpoint or file: every resource type it really serves, with its dataset names."""

    url: str  # canonical
    datasets: dict[str, tuple[str, ...]]  # type -> dataset names
    note: str = ""
    titled: bool = False  # its title is known (the planted files'): ``title``, None for a file without one
    title: str | None = None


@dataclass(frozen=True)
class Decoy:
    """A URL that looks like a resource but is none: nothing may be reported for it."""

    url: str
    why: str


@dataclass(frozen=True)
class CatalogueRecord:
    """A metadata record of our own loaded into the catalogue; ``links`` are (protocol, URL) pairs."""

    identifier: str
    title: str
    abstract: str
    subjects: tuple[str, ...]
    bbox: tuple[float, float, float, float]
    links: tuple[tuple[str, str], ...] = field(default_factory=tuple)
