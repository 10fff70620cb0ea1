"""The revisits' checker: fetch again what proved a resource and let its own detector read it, as the crawl
did.

An OGC service is asked for GetCapabilities of its type and version; every other resource is fetched at its
URL (the file, landing page or catalog), and its detector sends the same follow-up requests it sent in the
crawl (a Range read of a large ZIP or GeoTIFF, an ArcGIS service's ``f=json``), once per check. Only the
resource's own type is wanted: an OGC endpoint is probed for no other service. A check is changed when its
fingerprint (the document's sha256, or, for a file only read in part, a digest of what the detector read)
differs from the last check's; the store also calls it changed when reloading the resource changes its
metadata or datasets (the first check has no fingerprint to compare with: the crawl may have read another
variant of the document). Each check carries its request's time to first byte, total time and bytes, as
the fetcher measured them.

After a good check, an operation check (``geoweb.harvest.operations``) asks the resource for what it serves
(a map, a feature, the first bytes of a file) and judges the answer: a result of its own, ok or failed, with
its own request's times, that leaves the resource's outcome and schedule as they are.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Iterable
from urllib.parse import quote

from geoweb.detect.base import DetectContext, Detector, Fetch
from geoweb.detect.ogc.common import capabilities_url
from geoweb.errors import FetchError, GeowebError, HTTPStatusError
from geoweb.fetch.response import Response
from geoweb.harvest.operations import NoOperation, operation_request
from geoweb.models import OGC_TYPES, CheckOutcome, CheckResult, Due, Resource
from geoweb.models.revisit import check_operation
from geoweb.semantic import tag_datasets_in_turns
from geoweb.settings import Settings

log = logging.getLogger("geoweb.revisit")

CRAWL_FIELDS = ("level", "source_page", "discovered_at")  # how a crawl found it, not what it is


def recheck_url(due: Due) -> str:
    """The URL whose answer proves the resource."""
    if due.type not in OGC_TYPES:
        return due.url
    url = capabilities_url(due.url, due.type)
    return f"{url}&version={quote(due.version, safe='.')}" if due.version else url


def fingerprint(resource: Resource) -> str:
    """The sha256 of the document that proved the resource; for a file read in part (no whole document), of
    the record its detector made."""
    if resource.content_sha256:
        return resource.content_sha256
    record = {k: v for k, v in resource.to_record().items() if k not in CRAWL_FIELDS}
    return hashlib.sha256(json.dumps(record, sort_keys=True, default=str).encode()).hexdigest()


class _CheckContext(DetectContext):
    """A detector's context that remembers why the detector turned the response down."""

    last_miss: str | None = None

    def miss(self, detector: str, url: str, exc: GeowebError) -> list[Resource]:
        self.last_miss = f"{detector}: {exc}"
        return super().miss(detector, url, exc)


class Checker:
    """Checks due resources with one fetch (the crawl's fetcher: robots.txt, politeness, address guard).
    With ``operations``, a good check is followed by an operation check (``CheckResult.operation_check``)."""

    def __init__(
        self,
        fetch: Fetch,
        detectors: Iterable[Detector],
        settings: Settings,
        stats: Counter,
        *,
        operations: bool = True,
    ):
        self.fetch = fetch
        self.detectors = list(detectors)
        self.settings = settings
        self.stats = stats
        self.operations = operations

    async def check(self, due: Due) -> CheckResult:
        """Never raises for a server's fault: every failure is a ``failed`` result with its reason."""
        started = time.monotonic()
        response: Response | None = None
        try:
            response = await self.fetch(recheck_url(due))
            result = await self._read(due, response)
        except FetchError as exc:
            status = exc.status if isinstance(exc, HTTPStatusError) else None
            result = CheckResult(due, CheckOutcome.FAILED, 0.0, status, exc.reason, str(exc))
        except Exception as exc:  # a detector bug must not end the revisit; it is logged with its trace
            result = _crashed(due, "check", exc)
        _measured(result, check_operation(due.type), started, response)
        self._count("revisit", due, result)
        if self.operations and result.resource is not None:
            result.operation_check = await self.check_operation(due, result.resource)
        return result

    async def check_operation(self, due: Due, resource: Resource) -> CheckResult | None:
        """The operation check of ``resource`` as its detector just read it: ``ok`` (with a warning when the
        answer is odd but usable) or ``failed`` with its reason; None when none can be built from what the
        detector kept. Never raises for a server's fault."""
        try:
            request = operation_request(resource)
        except NoOperation as exc:
            self.stats["revisit/operation/none"] += 1
            log.debug("%s (%s): no operation check: %s", due.url, due.type, exc)
            return None
        started = time.monotonic()
        response: Response | None = None
        try:
            response = await self.fetch(request.url, headers=request.headers, max_bytes=request.max_bytes)
            warning = request.judge(response, self.settings.max_xml_bytes)
            result = CheckResult(due, CheckOutcome.OK, 0.0, response.status, warning=warning)
        except GeowebError as exc:  # the fetch's failure, or what the answer is instead of what was asked
            status = exc.status if isinstance(exc, HTTPStatusError) else None
            status = status or (response.status if response is not None else None)
            result = CheckResult(due, CheckOutcome.FAILED, 0.0, status, exc.reason, str(exc))
        except Exception as exc:  # a judge's bug must not end the revisit either
            result = _crashed(due, "operation check", exc)
        _measured(result, request.operation, started, response)
        self._count("revisit/operation", due, result)
        return result

    def _count(self, prefix: str, due: Due, result: CheckResult) -> None:
        self.stats[f"{prefix}/{result.outcome}"] += 1
        if result.outcome == CheckOutcome.FAILED:
            self.stats[f"{prefix}/failed/{result.error_reason}"] += 1
            log.info(
                "%s (%s): %s failed (%s): %s",
                due.url, due.type, result.operation, result.error_reason, result.error_message,
            )  # fmt: skip

    async def _read(self, due: Due, response: Response) -> CheckResult:
        """What the answer proves: the resource, changed or not, or why it failed."""
        if response.status >= 400:
            return CheckResult(
                due, CheckOutcome.FAILED, 0.0, response.status, "http_status", f"HTTP {response.status}"
            )
        asked: set[str] = set()  # a detector's follow-up requests go once per check, as once per crawl
        ctx = _CheckContext(
            fetch=self.fetch,
            settings=self.settings,
            types={due.type},
            first_time=_once(asked),
            stats=self.stats,
        )
        found: list[Resource] = []
        for detector in self.detectors:
            if due.type in detector.types and detector.accepts(response):
                found += [r for r in await detector.detect(response, ctx) if r.type == due.type]
        if not found:
            why = (
                ctx.last_miss or f"no {due.type} in the answer ({response.content_type or 'no content type'})"
            )
            return CheckResult(due, CheckOutcome.FAILED, 0.0, response.status, "not_found", why)
        resource = next((r for r in found if r.url == due.url), found[0])
        resource.url = due.url  # the key stays: a redirect does not make another resource
        # tagged with concepts as the crawl tags what it loads, or the reload would differ from the crawl's
        await tag_datasets_in_turns(resource.datasets, self.settings.concept_lcs_threshold)
        seen = fingerprint(resource)
        changed = due.baseline is not None and seen != due.baseline
        outcome = CheckOutcome.CHANGED if changed else CheckOutcome.UNCHANGED
        return CheckResult(due, outcome, 0.0, response.status, fingerprint=seen, resource=resource)


def _crashed(due: Due, what: str, exc: Exception) -> CheckResult:
    """A failed result for a bug met while checking, logged with its trace."""
    log.exception("%s (%s): %s crashed", due.url, due.type, what)
    return CheckResult(due, CheckOutcome.FAILED, 0.0, None, "crash", f"{type(exc).__name__}: {exc}")


def _measured(result: CheckResult, operation: str, started: float, response: Response | None) -> None:
    """Set the request ``result`` measured, the whole check's seconds, and its answering request's times
    (kept when a follow-up request failed; none without an answer)."""
    result.seconds = time.monotonic() - started
    result.operation = operation
    if response is not None and response.timing is not None:
        timing = response.timing
        result.first_byte_seconds, result.total_seconds = timing.first_byte_seconds, timing.total_seconds
        result.bytes = timing.bytes


def _once(asked: set[str]):
    """``DetectContext.first_time`` over ``asked``: True the first time a key is seen."""

    def first_time(key: str) -> bool:
        new = key not in asked
        asked.add(key)
        return new

    return first_time
