"""The URL filter chain: each filter returns the URL to keep or None to drop it (StormCrawler style).

Filters are small, built from settings, and count what they drop; ``URLFilters`` runs them in order.
``HostBudget`` is stateful and runs after dedup (the crawl applies it), so repeated links do not spend it.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import islice
from urllib.parse import urlsplit

from geoweb.links.normalize import normalize_url, origin
from geoweb.policy import URLPolicies
from geoweb.settings import Settings

# Documents and media: never a geospatial resource of the types we detect (the paper drops .doc, .pdf, .ppt).
IGNORED_EXTENSIONS = frozenset(
    """
    doc docx odt rtf pdf ps eps ppt pptx odp xls xlsx ods epub
    png jpg jpeg gif bmp ico svg webp psd
    mp3 wav ogg flac aac m4a mp4 m4v mov avi wmv flv mkv webm mpg mpeg
    css js woff woff2 ttf eot otf exe msi dmg iso apk deb rpm jar
    """.split()
)
_EXTENSION = re.compile(r"\.([a-z0-9_]{1,10})$")


class URLFilter:
    """Base: keep everything. ``name`` is the counter key of what the filter drops."""

    name = "none"

    def __call__(self, url: str) -> str | None:
        return url

    def label(self, url: str) -> str:
        """What ``geoweb filter`` shows for this filter on ``url``."""
        return type(self).__name__


class Normalise(URLFilter):
    """Drops what is not absolute http(s); returns the normalised spelling."""

    name = "not_http"

    def __call__(self, url: str) -> str | None:
        return normalize_url(url)


class MaxLength(URLFilter):
    name = "too_long"

    def __init__(self, max_length: int):
        self.max_length = max_length

    def __call__(self, url: str) -> str | None:
        return url if len(url) <= self.max_length else None


class IgnoredExtension(URLFilter):
    name = "ignored_extension"

    def __init__(self, extensions=IGNORED_EXTENSIONS):
        self.extensions = extensions

    def __call__(self, url: str) -> str | None:
        m = _EXTENSION.search(urlsplit(url).path.lower())
        return None if m and m.group(1) in self.extensions else url


class RepeatedPathSegments(URLFilter):
    """Drops paths where one segment repeats many times: relative-link loops such as /a/b/a/b/a/b/."""

    name = "repeated_segments"

    def __init__(self, max_repeats: int = 3):
        self.max_repeats = max_repeats

    def __call__(self, url: str) -> str | None:
        segments = [s for s in urlsplit(url).path.split("/") if s]
        if len(segments) > self.max_repeats and max(Counter(segments).values()) > self.max_repeats:
            return None
        return url


class URLPolicyFilter(URLFilter):
    """Drops URLs whose first matching URL-pattern policy says skip (``geoweb.policy``)."""

    name = "url_policy"

    def __init__(self, policies: URLPolicies):
        self.policies = policies

    def __call__(self, url: str) -> str | None:
        policy = self.policies.match(url)
        return None if policy is not None and policy.skips else url

    def label(self, url: str) -> str:
        policy = self.policies.match(url)
        return f"{type(self).__name__} ({policy or 'no rule matches'})"


class HostBudget(URLFilter):
    """At most ``max_pages`` URLs accepted per origin in a run: endless calendars and session IDs end here."""

    name = "host_budget"

    def __init__(self, max_pages: int):
        self.max_pages = max_pages
        self.counts: Counter[str] = Counter()

    def __call__(self, url: str) -> str | None:
        key = origin(url)
        if self.counts[key] >= self.max_pages:
            return None
        self.counts[key] += 1
        return url


class URLFilters(URLFilter):
    """The chain; itself a filter. Its filters are pure, so outcomes are memoised: on a real web most links
    are repeats (93% on the benchmark's; a second run of a crawl admits again every link of the pages it
    carries over, 1.5 million at 100,000 pages, 137,000 distinct), and each drop is still counted every time.
    The memo holds ``memo_size`` URLs (2^18, about 20 MB: more than the distinct links of a 100,000-page web,
    whose misses at 2^16 cost ten seconds); when full, its oldest quarter goes."""

    def __init__(self, filters: list[URLFilter], stats: Counter | None = None, *, memo_size: int = 1 << 18):
        self.filters = filters
        self.stats = stats if stats is not None else Counter()
        self.memo_size = memo_size
        # raw URL -> the URL kept (the key itself when the filters change nothing), or the filter that drops it
        self._memo: dict[str, str | URLFilter] = {}

    @classmethod
    def from_settings(cls, settings: Settings, stats: Counter | None = None) -> URLFilters:
        return cls(
            [
                Normalise(),
                MaxLength(settings.max_url_length),
                IgnoredExtension(),
                RepeatedPathSegments(),
                URLPolicyFilter(URLPolicies.from_setting(settings.url_policies)),
            ],
            stats,
        )

    def __call__(self, url: str) -> str | None:
        outcome = self._memo.get(url)
        if outcome is None:
            outcome = self._run(url)
            if len(self._memo) >= self.memo_size:
                for oldest in list(islice(self._memo, self.memo_size // 4)):
                    del self._memo[oldest]
            self._memo[url] = url if outcome == url else outcome
        if isinstance(outcome, URLFilter):
            self.stats[f"filter/{outcome.name}"] += 1
            return None
        return outcome

    def _run(self, url: str) -> str | URLFilter:
        for f in self.filters:
            url = f(url)
            if url is None:
                return f
        return url

    def trace(self, url: str) -> list[tuple[str, str | None]]:
        """Each filter's name and output for one URL, up to the first that drops it (``geoweb filter``)."""
        steps = []
        for f in self.filters:
            name = f.label(url)
            url = f(url)
            steps.append((name, url))
            if url is None:
                break
        return steps
