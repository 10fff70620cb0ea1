"""What a fetch returns: status, headers, a (possibly capped) body, and how long the request took."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([a-zA-Z0-9_\-:.]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]{0,200}?encoding\s*=\s*["']([a-zA-Z0-9_\-.]+)""")


@dataclass(frozen=True, slots=True)
class Timing:
    """How long the request of a response took, from ``time.monotonic()``: until its status line and headers
    arrived (time to first byte) and until its body was read. Retries, redirects' earlier hops and the waits
    of politeness are not in it: it is the answering request's own time."""

    first_byte_seconds: float
    total_seconds: float
    bytes: int  # body bytes received, as sent (before decoding), whether kept, streamed or skipped


@dataclass(slots=True)
class Response:
    url: str  # the URL asked for
    final_url: str  # after redirects: relative links resolve against it
    status: int
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    complete: bool = True  # False when the body was cut at the size cap or not read at all
    redirects: list[str] = field(default_factory=list)
    body_offset: int = 0  # where ``body`` starts in the whole document (a tail read: its size minus the tail)
    timing: Timing | None = None  # set by the fetcher on every response it returns

    @property
    def content_type(self) -> str:
        """The media type, lower-case, without parameters ('' when absent)."""
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    @property
    def content_length(self) -> int | None:
        try:
            return int(self.headers["content-length"])
        except (KeyError, ValueError):
            return None

    @property
    def filename(self) -> str | None:
        """The file name of a Content-Disposition header, if any."""
        cd = self.headers.get("content-disposition", "")
        m = re.search(r"""filename\*?\s*=\s*(?:UTF-8'[^']*')?["']?([^"';]+)""", cd, re.I)
        return m.group(1).strip() if m else None

    def names_file(self, *extensions: str) -> bool:
        """Whether the asked-for URL, the final URL or the Content-Disposition name ends in an extension."""
        names = (urlsplit(self.url).path, urlsplit(self.final_url).path, self.filename or "")
        return any(name.lower().endswith(extensions) for name in names)

    @property
    def encoding(self) -> str:
        """The charset: HTTP header, then XML declaration or HTML meta, then UTF-8."""
        m = re.search(r"charset\s*=\s*[\"']?([\w\-:.]+)", self.headers.get("content-type", ""), re.I)
        if m:
            return _checked(m.group(1))
        head = self.body[:2048]
        m = _XML_ENCODING.match(head) or _CHARSET.search(head)
        return _checked(m.group(1).decode("ascii", "replace")) if m else "utf-8"

    def text(self) -> str:
        """The body decoded with ``encoding``; undecodable bytes are replaced, never fatal."""
        return self.body.decode(self.encoding, errors="replace")


def _checked(name: str) -> str:
    import codecs

    try:
        return codecs.lookup(name).name
    except LookupError:
        return "utf-8"
