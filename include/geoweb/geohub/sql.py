"""The SQL of a search: one statement for a page of results, one for the numbers of the whole answer (the
total, the facets and where the matches lie against the box). Every value is a parameter; only fixed
fragments chosen by the query's shape are joined into the statements.

A text search finds candidates through the GIN index of ``resources.search`` (a resource's own words, its
datasets' names and titles and the concepts they are about: migration 0012), ranks them with ts_rank and
pages through them by rank; without text, newest first. ts_rank rather than ts_rank_cd: it scores each word
by its best-weighted place and adds little for repeats, so a service with a hundred matching layers does not
bury one whose title matches. A box meets a resource when it meets the resource's box, through its GIST
index: the detectors make a resource's box the union of its datasets' boxes (a KML file's, its whole
document's), so a resource is found wherever one of its datasets is.
"""

from __future__ import annotations

from geoweb.geohub.query import Box, SearchQuery
from geoweb.models import ResourceStatus

WORDS = "websearch_to_tsquery('english', %(text)s)"
# The last word also as a prefix, as the user types: the query's last lexeme (stemmed, so "rivers" is river
# and "riv" riv) gets :*. tsquery's text form quotes every lexeme, so the query reads back whole.
TYPED_WORDS = f"regexp_replace({WORDS}::text, '''$', ''':*')::tsquery"
# An address is indexed whole and as its words (geoweb_url_words, migration 0005): match either.
ADDRESS = (
    "(websearch_to_tsquery('english', %(text)s)"
    " || phraseto_tsquery('english', regexp_replace(%(text)s, '[^[:alnum:]]+', ' ', 'g')))"
)
ABSTRACT_CHARS = 400  # of an abstract in a result; the detail has all of it
GEOJSON_DIGITS = 5  # decimals of degrees: about a metre
TOP_CONCEPTS = 5  # a result's most frequent concepts among its datasets
TOP_PROVIDERS = 20  # providers in the provider facet, the most frequent first

_FOUND_BY = (
    "EXISTS (SELECT 1 FROM run_resources rr WHERE rr.resource_id = r.id AND rr.run_id = %(run)s{level})"
)

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

# The numbers of the whole answer. The total and the facets count the matches (in the box, when there is
# one); the matches of every filter but the box are only counted, all of them and those without a footprint,
# so that the answer can say how many the box left out and how many no box can find (without text, through
# the primary key and resources_no_footprint). A resource's level is that of its first sighting, or in the
# run searched (as the level filter reads it); its concepts are `about`, each concept with every concept
# above it.
_SUMMARY = f"""
WITH matches AS MATERIALIZED (
    SELECT r.id, r.type, r.provider, r.last_status, r.about, {{level}} AS level, r.bbox IS NULL AS no_footprint
    FROM resources r
    WHERE {{where}} AND {{in_box}}
)
SELECT
    (SELECT count(*) FROM matches),
    {{unboxed}},
    {{no_footprint}},
    ARRAY(SELECT ARRAY[type, count(*)::text] FROM matches GROUP BY type ORDER BY count(*) DESC, type),
    ARRAY(SELECT ARRAY[provider, count(*)::text] FROM matches WHERE provider IS NOT NULL
          GROUP BY provider ORDER BY count(*) DESC, provider LIMIT {TOP_PROVIDERS}),
    ARRAY(SELECT ARRAY[c, count(*)::text] FROM (SELECT unnest(about) AS c FROM matches) t
          GROUP BY c ORDER BY count(*) DESC, c),
    ARRAY(SELECT ARRAY[level, count(*)] FROM matches WHERE level IS NOT NULL GROUP BY level ORDER BY level),
    ARRAY(SELECT ARRAY[last_status, count(*)::text] FROM matches GROUP BY last_status ORDER BY last_status)
"""
_RUN_LEVEL = "(SELECT rr.level FROM run_resources rr WHERE rr.run_id = %(run)s AND rr.resource_id = r.id)"


def _envelopes(boxes: list[Box]) -> tuple[list[str], dict]:
    """The SQL envelopes of the boxes and their parameters."""
    params, sql = {}, []
    for i, box in enumerate(boxes):
        params.update({f"w{i}": box[0], f"s{i}": box[1], f"e{i}": box[2], f"n{i}": box[3]})
        sql.append(f"ST_MakeEnvelope(%(w{i})s, %(s{i})s, %(e{i})s, %(n{i})s, 4326)")
    return sql, params


def text_query(query: SearchQuery) -> str:
    """The tsquery of the query's text: an address, words, or words whose last one is being typed."""
    if query.is_address:
        return ADDRESS
    return TYPED_WORDS if query.is_typing else WORDS


def _filters(query: SearchQuery) -> tuple[list[str], dict]:
    """The conditions of every filter but the box, and their parameters."""
    params: dict = {}
    where = ["TRUE"]
    if query.text:
        params["text"] = query.text
        where.append(f"r.search @@ {text_query(query)}")
    if query.types:
        params["types"] = list(query.types)
        where.append("r.type = ANY(%(types)s)")
    if query.run is not None:
        params.update(run=query.run, level=query.level)
        where.append(_FOUND_BY.format(level=" AND rr.level = %(level)s" if query.level is not None else ""))
    elif query.level is not None:  # the level of its first sighting, as each result shows
        params["level"] = query.level
        where.append("r.level = %(level)s")
    if query.concept is not None:  # through the GIN index of resources.about
        params["concept"] = [query.concept]
        where.append("r.about @> %(concept)s::text[]")
    if query.provider is not None:
        params["provider"] = query.provider
        where.append("r.provider = %(provider)s")
    if query.no_footprint:
        where.append("r.bbox IS NULL")
    if query.answering:
        where.append(f"r.last_status <> '{ResourceStatus.DEAD}'")
    return where, params


def _in_box(query: SearchQuery) -> tuple[str, dict]:
    """The condition of the box (two across the antimeridian), TRUE without one, and its parameters."""
    if query.bbox is None:
        return "TRUE", {}
    boxes, params = _envelopes(query.boxes())
    return "(" + " OR ".join(f"ST_Intersects(r.bbox, {box})" for box in boxes) + ")", params


def search_statement(query: SearchQuery) -> tuple[str, dict]:
    """The statement and parameters of one page of results, one row more than the page (so the caller
    knows whether another page follows)."""
    where, params = _filters(query)
    in_box, box_params = _in_box(query)
    where.append(in_box)
    params.update(box_params, limit=query.limit + 1, offset=query.offset)
    rank, order, outer, materialized = "NULL::real", "id DESC", "r.id DESC", "NOT MATERIALIZED"
    if query.text:
        rank = f"ts_rank(r.search, {text_query(query)})"
        order, outer, materialized = "rank DESC, id DESC", "page.rank DESC, r.id DESC", "MATERIALIZED"
    where_sql = "\n      AND ".join(where)
    sql = _PAGE.format(materialized=materialized, rank=rank, where=where_sql, order=order, outer=outer)
    return sql, params


def summary_statement(query: SearchQuery) -> tuple[str, dict]:
    """The statement and parameters of the answer's numbers: one row of the total, the matches of every filter
    but the box (NULL without a box), those of them without a footprint, and the type, provider, concept,
    level and status facets as arrays of [value, count]."""
    where, params = _filters(query)
    in_box, box_params = _in_box(query)
    params.update(box_params)
    where_sql = "\n      AND ".join(where)
    sql = _SUMMARY.format(
        in_box=in_box,
        where=where_sql,
        unboxed=f"(SELECT count(*) FROM resources r WHERE {where_sql})" if query.bbox else "NULL::bigint",
        # without a box they are among the matches
        no_footprint=f"(SELECT count(*) FROM resources r WHERE {where_sql} AND r.bbox IS NULL)"
        if query.bbox
        else "(SELECT count(*) FROM matches WHERE no_footprint)",
        level=_RUN_LEVEL if query.run is not None else "r.level",
    )
    return sql, params


def chosen_statement(query: SearchQuery, limit: int) -> tuple[str, dict]:
    """The statement and parameters of the first ``limit`` matches (ranked, or newest first without text) as
    an export takes them (``geoweb.store.resources.Chosen``): rows of (resource_id, level, source_page,
    discovered_at), a resource's first sighting."""
    where, params = _filters(query)
    in_box, box_params = _in_box(query)
    where.append(in_box)
    params.update(box_params, chosen_limit=limit)
    order = f"ts_rank(r.search, {text_query(query)}) DESC, r.id DESC" if query.text else "r.id DESC"
    where_sql = "\n      AND ".join(where)
    sql = (
        "SELECT r.id AS resource_id, r.level, r.source_page, r.first_seen AS discovered_at\n"
        f"FROM resources r\nWHERE {where_sql}\nORDER BY {order} LIMIT %(chosen_limit)s"
    )
    return sql, params
