"""URL normalisation: one spelling per resource, so dedup sees duplicates as equal."""

from __future__ import annotations

import posixpath
from urllib.parse import SplitResult, urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str | None:
    """Scheme and host lower-cased, default port and fragment dropped, dot-segments resolved.

    Returns None for anything that is not an absolute http(s) URL with a host.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # bad port or bracketed host
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = parts.hostname.rstrip(".")
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    # user:password@ is dropped: credentials in links are the page's leak, never stored or replayed
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _remove_dot_segments(parts.path) or "/"
    return urlunsplit(SplitResult(scheme, netloc, path, parts.query, ""))


def _remove_dot_segments(path: str) -> str:
    if "." not in path:
        return path
    resolved = posixpath.normpath(path)
    if resolved.startswith("//"):  # normpath keeps a leading double slash
        resolved = resolved[1:]
    if path.endswith("/") and not resolved.endswith("/"):
        resolved += "/"
    return "" if resolved == "." else resolved


def origin(url: str) -> str:
    """scheme://host[:port] of a normalised URL: the unit of robots.txt, politeness and page budgets."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
