"""The ``resources``, ``datasets`` and ``run_resources`` tables: what the crawl found, each resource once by
(url, type), and the runs that found it.

The writes take the cursor of the caller's transaction: a crawl's pages (``Frontier.commit_pages``) and a
revisit's check (``Revisits.record_check``) save resources together with their own rows. A crawl's resource
that carries the measured fetch that proved it (an OGC service's GetCapabilities) gets a row of
``resource_checks`` too, as a revisit's check does, so the quality figures count the crawl's fetches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC

from psycopg2.extras import RealDictCursor, execute_values

from geoweb.errors import StoreError
from geoweb.models import CheckOutcome, Dataset, Resource, ResourceStatus
from geoweb.models.revisit import check_operation
from geoweb.store.geometry import boxes_of
from geoweb.store.repository import PAGE_SIZE, Repository
from geoweb.store.rows import DATASET_COLUMNS, RESOURCE_COLUMNS, ResourceRows

EXPORT_BATCH = 1000  # rows read per round trip by the exports

_RESOURCES_UPSERT = f"""
INSERT INTO resources ({", ".join(RESOURCE_COLUMNS)}) VALUES %s
ON CONFLICT (url, type) DO UPDATE SET
    version = EXCLUDED.version, title = EXCLUDED.title, abstract = EXCLUDED.abstract,
    keywords = EXCLUDED.keywords, provider = EXCLUDED.provider, bbox = EXCLUDED.bbox, extra = EXCLUDED.extra,
    content_sha256 = EXCLUDED.content_sha256, conformance = EXCLUDED.conformance, defects = EXCLUDED.defects,
    owslib_error = EXCLUDED.owslib_error, last_seen = now(), last_status = '{ResourceStatus.OK}'
RETURNING id, url, type
"""
_DATASETS_UPSERT = f"""
INSERT INTO datasets AS d ({", ".join(DATASET_COLUMNS)}) VALUES %s
ON CONFLICT (resource_id, position) DO UPDATE SET
    name = EXCLUDED.name, title = EXCLUDED.title, keywords = EXCLUDED.keywords,
    footprint = EXCLUDED.footprint, extra = EXCLUDED.extra, concepts = EXCLUDED.concepts
WHERE (d.name, d.title, d.keywords, d.footprint, d.extra, d.concepts)
    IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.title, EXCLUDED.keywords, EXCLUDED.footprint, EXCLUDED.extra,
                      EXCLUDED.concepts)
"""
# datasets past the end of a resource's new list are gone from its document
_DATASETS_TRIM = """
DELETE FROM datasets d USING unnest(%s::bigint[], %s::integer[]) AS kept(resource_id, count)
WHERE d.resource_id = kept.resource_id AND d.position >= kept.count
"""
_RUN_RESOURCES_UPSERT = """
INSERT INTO run_resources AS rr (run_id, resource_id, level, source_page, discovered_at, found_on) VALUES %s
ON CONFLICT (run_id, resource_id) DO UPDATE SET
    level = EXCLUDED.level, source_page = EXCLUDED.source_page, discovered_at = EXCLUDED.discovered_at,
    found_on = EXCLUDED.found_on
WHERE EXCLUDED.level < rr.level
"""
# The content hashes stored of some (url, type) keys, read before an upsert replaces them. Their rows are
# locked, in the order the upsert takes them (keys sorted by code point), so that a shard committing the same
# resource waits and then labels its check against this commit's hash, not the one both read before.
_LOCK_STORED = """
SELECT r.url, r.type, r.content_sha256 FROM resources r
JOIN unnest(%s::text[], %s::text[]) AS k(url, type) ON r.url = k.url AND r.type = k.type
ORDER BY r.url COLLATE "C", r.type COLLATE "C" FOR UPDATE OF r
"""
_CHECKS_INSERT = """
INSERT INTO resource_checks (resource_id, run_id, outcome, http_status, error_reason, error_message,
    content_sha256, seconds, details, operation, first_byte_seconds, total_seconds, bytes, warning) VALUES %s
"""
_CHECK_VALUES = """(%(id)s, %(run_id)s, %(outcome)s, %(status)s, %(reason)s, %(message)s, %(sha)s, %(seconds)s,
    %(details)s::jsonb, %(operation)s, %(first_byte)s, %(total)s, %(bytes)s, %(warning)s)"""
_SHA = RESOURCE_COLUMNS.index("content_sha256")
# a resource new to the store: the crawl's fetch answered, nothing was there to change
_FIRST_SIGHTING = '{"first_sighting": true}'

# The resources an export holds are the rows (resource_id, level, source_page, discovered_at) of a statement
# (``Chosen``) joined in as ``c``: a run's sightings, or a search's matches (GeoHub).
_EXPORT_RESOURCES = """
SELECT r.id, r.url, r.type, r.version, r.title, r.abstract, r.keywords, r.provider, ST_AsBinary(r.bbox),
       r.extra, r.content_sha256, c.level, c.source_page, c.discovered_at, r.conformance, r.defects,
       r.owslib_error
FROM ({chosen}) c JOIN resources r ON r.id = c.resource_id
ORDER BY c.level, r.id
"""
_EXPORT_DATASETS = """
SELECT resource_id, name, title, keywords, ST_AsBinary(footprint), extra, concepts
FROM datasets WHERE resource_id = ANY(%s)
ORDER BY resource_id, position
"""

# The rows of the chosen resources in the views of migration 0011, geometries as WKB: the resources, with the
# level and source page of their sighting and their quality (0027), and their datasets. The availability is
# numeric in the view, which psycopg2 reads as Decimal; the files hold it as a double.
_EXPORT_LAYERS = {
    "resources": """
SELECT v.id, v.url, v.type, v.version, v.title, v.abstract, v.provider, v.keywords, c.level, c.source_page,
       v.first_seen, v.last_seen, v.last_status, ST_AsBinary(v.bbox) AS bbox, v.conformance, v.defects,
       v.owslib_error, v.checks_30d, v.availability_30d_percent::double precision AS availability_30d_percent,
       v.response_median, v.inspire_availability, v.inspire_getmap
FROM ({chosen}) c JOIN qgis_resources v ON v.id = c.resource_id
ORDER BY c.level, v.id
""",
    "datasets": """
SELECT v.id, v.resource_id, v.resource_url, v.resource_type, v.resource_title, v.provider, v.position, v.name,
       v.title, v.keywords, v.concepts, ST_AsBinary(v.footprint) AS footprint
FROM ({chosen}) c JOIN qgis_datasets v ON v.resource_id = c.resource_id
ORDER BY c.level, v.resource_id, v.position
""",
}
EXPORT_LAYERS = tuple(_EXPORT_LAYERS)


def upsert_resources(cur, resources: list[ResourceRows]) -> dict[tuple[str, str], int]:
    """Upsert resources and replace their dataset lists, in the cursor's transaction; returns the id of each
    (url, type)."""
    returned = execute_values(
        cur, _RESOURCES_UPSERT, [r.values for r in resources], page_size=PAGE_SIZE, fetch=True
    )
    ids = {(url, type_): id_ for id_, url, type_ in returned}
    datasets = [(ids[r.key], *d) for r in resources for d in r.datasets]
    if datasets:
        execute_values(cur, _DATASETS_UPSERT, datasets, page_size=PAGE_SIZE)
    cur.execute(_DATASETS_TRIM, ([ids[r.key] for r in resources], [len(r.datasets) for r in resources]))
    return ids


def upsert_run_resources(
    cur, run_id: str, resources: list[ResourceRows], found_on: dict[tuple[str, str], str]
) -> dict[tuple[str, str], int]:
    """Upsert resources and link the run to each (at the lowest level it found it), in the cursor's
    transaction; ``found_on`` maps a resource's key to the page whose fetch found it. Each resource with a
    measured fetch (``ResourceRows.proof``) gets its check row (``_insert_crawl_checks``). Returns the id of
    each (url, type)."""
    before = _lock_stored(cur, resources)
    ids = upsert_resources(cur, resources)
    links = [
        (run_id, ids[r.key], r.level, r.source_page, r.discovered_at, found_on[r.key]) for r in resources
    ]
    execute_values(cur, _RUN_RESOURCES_UPSERT, links, page_size=PAGE_SIZE)
    _insert_crawl_checks(cur, run_id, [r for r in resources if r.proof is not None], ids, before)
    return ids


def insert_checks(cur, checks: list[dict]) -> None:
    """Rows of ``resource_checks``, each a dict of ``_CHECK_VALUES``' names, in the cursor's transaction."""
    if checks:
        execute_values(cur, _CHECKS_INSERT, checks, template=_CHECK_VALUES, page_size=PAGE_SIZE)


def _lock_stored(cur, resources: list[ResourceRows]) -> dict[tuple[str, str], str | None]:
    """The content_sha256 the store holds of each resource it knows of ``resources``, their rows locked until
    the transaction ends; the new ones are absent."""
    cur.execute(_LOCK_STORED, ([r.key[0] for r in resources], [r.key[1] for r in resources]))
    return {(url, type_): sha for url, type_, sha in cur.fetchall()}


def _insert_crawl_checks(
    cur,
    run_id: str,
    resources: list[ResourceRows],
    ids: dict[tuple[str, str], int],
    before: dict[tuple[str, str], str | None],
) -> None:
    """A ``resource_checks`` row of the run for each measured fetch: changed when the stored content hash
    differs from the new one, unchanged otherwise or for a first sighting (noted in its details); either
    counts as available. The revisit schedule and its fingerprint are left to revisits."""
    checks = []
    for r in resources:
        proof, sha = r.proof, r.values[_SHA]
        if r.key not in before:
            outcome, details = CheckOutcome.UNCHANGED, _FIRST_SIGHTING
        else:
            outcome = CheckOutcome.CHANGED if before[r.key] != sha else CheckOutcome.UNCHANGED
            details = "{}"
        checks.append({
            "id": ids[r.key], "run_id": run_id, "outcome": outcome, "status": proof.status, "reason": None,
            "message": None, "sha": sha, "seconds": proof.total_seconds, "details": details,
            "operation": check_operation(r.key[1]), "first_byte": proof.first_byte_seconds,
            "total": proof.total_seconds, "bytes": proof.bytes, "warning": None,
        })  # fmt: skip
    insert_checks(cur, checks)


@dataclass(frozen=True, slots=True)
class Chosen:
    """The resources an export holds: a statement of rows (resource_id, level, source_page, discovered_at),
    each resource once, and its named parameters."""

    sql: str
    params: dict

    @classmethod
    def run(cls, run_id: str) -> Chosen:
        """The resources a run found, with the level, source page and time of the run's sighting."""
        return cls(_RUN_SIGHTINGS, {"run": run_id})


_RUN_SIGHTINGS = (
    "SELECT resource_id, level, source_page, discovered_at FROM run_resources WHERE run_id = %(run)s"
)


class Resources(Repository):
    """The resources found, read back."""

    def csw_urls(self, configured: Iterable[str]) -> list[str]:
        """The catalogues to harvest: the configured endpoints and every CSW the crawl has found, once each."""
        with self._transaction() as cur:
            cur.execute("SELECT url FROM resources WHERE type = 'CSW'")
            found = [row[0] for row in cur.fetchall()]
        return sorted({url.strip() for url in [*configured, *found] if url and url.strip()})

    def export(self, run_id: str) -> Iterator[dict]:
        """The run's resources as ``Resource.to_record()`` records (the ``geoweb crawl`` JSON lines), by level,
        streamed from one snapshot: use the Store for nothing else until the iteration ends."""
        self.check_run(run_id)
        return self.export_chosen(Chosen.run(run_id))

    def export_chosen(self, chosen: Chosen) -> Iterator[dict]:
        """The chosen resources as records, as ``export`` gives a run's."""
        with self.conn, self.conn.cursor(name="export_run") as resources, self.conn.cursor() as cur:
            resources.itersize = EXPORT_BATCH
            resources.execute(_EXPORT_RESOURCES.format(chosen=chosen.sql), chosen.params)
            while batch := resources.fetchmany(EXPORT_BATCH):
                yield from _records(cur, batch)

    def export_layers_chosen(
        self, chosen: Chosen, layers: Sequence[str] = EXPORT_LAYERS
    ) -> Iterator[tuple[str, Iterator[list[dict]]]]:
        """The chosen resources' rows of the views ``qgis_resources`` and ``qgis_datasets`` (geometries as WKB
        in memoryviews, as psycopg2 reads bytea; the level and source page those of the sighting chosen): for each layer asked for (of
        ``EXPORT_LAYERS``), its name and its rows in batches of dicts, column by name. The layers come from
        one snapshot, so a crawl committing meanwhile cannot make them disagree: read each layer's batches
        before the next layer, and use the connection for nothing else until the iteration ends."""
        with self.conn, self.conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            for layer in layers:
                with self.conn.cursor(name=f"export_{layer}", cursor_factory=RealDictCursor) as rows:
                    rows.itersize = EXPORT_BATCH
                    rows.execute(_EXPORT_LAYERS[layer].format(chosen=chosen.sql), chosen.params)
                    yield layer, _batches(rows)

    def check_run(self, run_id: str) -> None:
        """StoreError for a run the database does not know."""
        with self._transaction() as cur:
            cur.execute("SELECT 1 FROM crawl_runs WHERE run_id = %s", (run_id,))
            if cur.fetchone() is None:
                raise StoreError(f"unknown run {run_id!r}")


def _batches(cursor) -> Iterator[list]:
    while batch := cursor.fetchmany(EXPORT_BATCH):
        yield batch


def _records(cur, batch: list[tuple]) -> Iterator[dict]:
    """Records of a batch of resource rows (``_EXPORT_RESOURCES``), with their datasets."""
    cur.execute(_EXPORT_DATASETS, ([row[0] for row in batch],))
    rows = cur.fetchall()
    datasets: dict[int, list[Dataset]] = defaultdict(list)
    for (resource_id, name, title, keywords, _, extra, concepts), box in zip(
        rows, _boxes(rows, 4), strict=True
    ):
        datasets[resource_id].append(
            Dataset(name=name, title=title, bbox=box, keywords=keywords, extra=extra, concepts=concepts)
        )
    for row, box in zip(batch, _boxes(batch, 8), strict=True):
        id_, url, type_, version, title, abstract, keywords, provider, _, extra, sha, level, source, at = row[
            :14
        ]
        conformance, defects, owslib_error = row[14:]
        yield Resource(
            url=url, type=type_, version=version, title=title, abstract=abstract, keywords=keywords,
            provider=provider, datasets=datasets[id_], bbox=box, extra=extra, content_sha256=sha, level=level,
            source_page=source, discovered_at=at.astimezone(UTC).isoformat(timespec="seconds"),
            conformance=conformance, defects=defects, owslib_error=owslib_error,
        ).to_record()  # fmt: skip


def _boxes(rows: list[tuple], column: int) -> list:
    return boxes_of([None if row[column] is None else bytes(row[column]) for row in rows])
