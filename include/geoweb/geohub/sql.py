"""The SQL of a search. Every value is a parameter; only fixed fragments chosen by the query's shape are
joined into the statement.

A text search finds candidates through the GIN index of ``resources.search``, ranks them with ts_rank and
pages through them by rank; without text, newest first. A box meets a resource when it meets the resource's
box, through its GIST index: the detectors make a resource's box the union of its datasets' boxes (a KML
file's, its whole document's), so a resource is found wherever one of its datasets is.
"""

from __future__ import annotations

from geoweb.geohub.query import Box, SearchQuery
from geoweb.models import ResourceStatus

WORDS = "websearch_to_tsquery('english', %(text)s)"
# An address is indexed whole and as its words (geoweb_url_words, migration 0005): match either.
ADDRESS = (
    "(websearch_to_tsquery('english', %(text)s)"
    " || phraseto_tsquery('english', regexp_replace(%(text)s, '[^[:alnum:]]+', ' ', 'g')))"
)
ABSTRACT_CHARS = 400  # of an abstract in a result; the detail has all of it
GEOJSON_DIGITS = 5  # decimals of degrees: about a metre
TOP_CONCEPTS = 5  # a result's most frequent concepts among its datasets

_FOUND_BY = "EXISTS (SELECT 1 FROM run_resources rr WHERE rr.resource_id = r.id{run}{level})"
# Through the GIN index of datasets.concepts (migration 0006).
_ABOUT = "EXISTS (SELECT 1 FROM datasets d WHERE d.resource_id = r.id AND d.concepts && %(concepts)s::text[])"

# The matches, the page of them, and the page's rows with their dataset count, footprint (a resource's
# box, else the extent of its datasets) and most frequent concepts. A text search ranks every match anyway, so its matches are found
# first (MATERIALIZED): else the planner may probe the other filters in rank order, match after match.
# Newest first, the matches are not materialized, so that the page stops after its rows.
_PAGE = f"""
WITH matches AS {{materialized}} (
    SELECT r.id, {{rank}} AS rank
    FROM resources r
    WHERE {{where}}
), page AS (
    SELECT id, rank FROM matches ORDER BY {{order}} LIMIT %(limit)s OFFSET %(offset)s
)
SELECT r.id, r.url, r.type, r.version, r.title, left(r.abstract, {ABSTRACT_CHARS}), r.provider, r.keywords,
       (SELECT count(*) FROM datasets d WHERE d.resource_id = r.id),
       r.level, r.source_page, r.keyword,
       ST_AsGeoJSON(coalesce(
           r.bbox, (SELECT ST_Envelope(ST_Collect(d.footprint)) FROM datasets d WHERE d.resource_id = r.id)
       ), {GEOJSON_DIGITS})::json,
       page.rank,
       r.last_status,
       ARRAY(SELECT c FROM datasets d, unnest(d.concepts) c WHERE d.resource_id = r.id
             GROUP BY c ORDER BY count(*) DESC, c LIMIT {TOP_CONCEPTS})
FROM page JOIN resources r ON r.id = page.id
ORDER BY {{outer}}
"""


def _envelopes(boxes: list[Box]) -> tuple[list[str], dict]:
    """The SQL envelopes of the boxes and their parameters."""
    params, sql = {}, []
    for i, box in enumerate(boxes):
        params.update({f"w{i}": box[0], f"s{i}": box[1], f"e{i}": box[2], f"n{i}": box[3]})
        sql.append(f"ST_MakeEnvelope(%(w{i})s, %(s{i})s, %(e{i})s, %(n{i})s, 4326)")
    return sql, params


def search_statement(query: SearchQuery) -> tuple[str, dict]:
    """The statement and parameters of one page of results, one row more than the page (so the caller
    knows whether another page follows)."""
    params: dict = {"limit": query.limit + 1, "offset": query.offset}
    where = ["TRUE"]
    rank, order, outer, materialized = "NULL::real", "id DESC", "r.id DESC", "NOT MATERIALIZED"
    if query.text:
        params["text"] = query.text
        tsquery = ADDRESS if query.is_address else WORDS
        where.append(f"r.search @@ {tsquery}")
        rank = f"ts_rank(r.search, {tsquery})"
        order, outer, materialized = "rank DESC, id DESC", "page.rank DESC, r.id DESC", "MATERIALIZED"
    if query.types:
        params["types"] = list(query.types)
        where.append("r.type = ANY(%(types)s)")
    if query.bbox is not None:
        boxes, box_params = _envelopes(query.boxes())  # two across the antimeridian
        params.update(box_params)
        where.append("(" + " OR ".join(f"ST_Intersects(r.bbox, {box})" for box in boxes) + ")")
    if query.run is not None or query.level is not None:
        params.update(run=query.run, level=query.level)
        where.append(
            _FOUND_BY.format(
                run=" AND rr.run_id = %(run)s" if query.run is not None else "",
                level=" AND rr.level = %(level)s" if query.level is not None else "",
            )
        )
    if query.concept is not None:
        params["concepts"] = query.concepts()
        where.append(_ABOUT)
    if query.answering:
        where.append(f"r.last_status <> '{ResourceStatus.DEAD}'")
    where_sql = "\n      AND ".join(where)
    sql = _PAGE.format(materialized=materialized, rank=rank, where=where_sql, order=order, outer=outer)
    return sql, params
