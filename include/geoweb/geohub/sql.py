"""The SQL of a search: one statement for a page of results and the numbers of the whole answer (the total,
the facets and where the matches lie against the box). Every value is a parameter; only fixed fragments
chosen by the query's shape are joined into the statement.

A text search finds candidates through the GIN index of ``resources.search`` (a resource's own words, its
datasets' names and titles and the concepts they are about: migration 0012), ranks them with ts_rank and
pages through them by rank; without text, newest first. ts_rank rather than ts_rank_cd: it scores each word
by its best-weighted place and adds little for repeats, so a service with a hundred matching layers does not
bury one whose title matches. Where ranks are equal, reliability breaks the tie (a resource that answered at
least RELIABLE_CHECKS checks of 30 days, 99 % of them or more, then one not known to, then one that answered
fewer than 99 %), then conformance: a conformant service (or a resource nothing judges: an OGC API, a file)
comes before a readable one, a readable one before one only identified (``geoweb.models.Conformance``); then
the newest first. The quality figures are those each resource keeps as of its last check (migration 0023). A box meets a resource when it meets the
resource's box, through its GIST index: the detectors make a resource's box the union of its datasets' boxes
(a KML file's, its whole document's), so a resource is found wherever one of its datasets is.
"""

from __future__ import annotations

from dataclasses import replace

from geoweb.geohub.query import DEFAULT_LIMIT, INSPIRE_VERDICTS, Box, SearchQuery
from geoweb.models import Conformance, ResourceStatus

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
WORLD: Box = (-180.0, -90.0, 180.0, 90.0)

# Equal ranks: the services whose capabilities OWSLib reads whole first, those read with defects next, those
# only identified last; a resource nothing judges (NULL) counts as conformant, having no defect named.
_CONFORMANCE_ORDER = (
    f"CASE {{column}} WHEN '{Conformance.READABLE}' THEN 1 WHEN '{Conformance.IDENTIFIED}' THEN 2 ELSE 0 END"
)

# Equal ranks, before conformance: a resource that answered at least RELIABLE_CHECKS checks of the last 30 days,
# RELIABLE_PERCENT of them or more (the INSPIRE availability share), first; then one nothing says much of (no
# check, or fewer, all answered); last one that answered fewer. The schedule checks a new resource after 1, 3,
# 7 and 15 days, so one that always answers is reliable from its third check, a week after it was found.
RELIABLE_CHECKS = 3
RELIABLE_PERCENT = 99
_RELIABILITY = (
    "CASE WHEN r.availability_30d_percent < %(reliable_percent)s THEN 2"
    " WHEN r.checks_30d >= %(reliable_checks)s THEN 0 ELSE 1 END"
)
MET, NOT_MET, NOT_ENOUGH = INSPIRE_VERDICTS
# A WMS not checked since migration 0023 has no verdict kept: it has not enough checks.
_VERDICT = f"CASE WHEN r.type = 'WMS' THEN coalesce(r.{{column}}, '{NOT_ENOUGH}') END"
# Both INSPIRE view-service criteria together: met when both are, not met when either is not.
_INSPIRE = (
    f"CASE WHEN r.type <> 'WMS' THEN NULL"
    f" WHEN r.inspire_availability = '{MET}' AND r.inspire_getmap = '{MET}' THEN '{MET}'"
    f" WHEN '{NOT_MET}' IN (r.inspire_availability, r.inspire_getmap) THEN '{NOT_MET}'"
    f" ELSE '{NOT_ENOUGH}' END"
)
_INSPIRE_ORDER = f"CASE inspire WHEN '{MET}' THEN 0 WHEN '{NOT_MET}' THEN 1 ELSE 2 END"

# Facets are counted exactly up to this many matches, above it on a sample of about as many (chosen by a
# hash of the resource id, so that a search counts the same sample each time) and scaled to the total, which
# stays exact: counting 100,000 matches by five facets takes longer than a whole search may (bench/README.md).
# A sample of 5,000 keeps a facet of 5% of the matches within about 6% (one standard error).
EXACT_FACETS = 5_000

# The page and the numbers of the whole answer in one statement, from one read of the candidates (the matches
# of every filter but the box and the level), each marked in the box or not and at the level or not. A text
# search reads them from `resources`, whose rows hold the documents it ranks, and finds them all first
# (MATERIALIZED: it ranks every match anyway, and else the planner may probe the other filters in rank order,
# match after match). Without text they come from the narrow `search_rows` (migration 0013) and are not
# materialized, so that each use takes its own path: the page stops after its rows newest first, the box uses
# its GIST index, the counts scan the narrow rows. The total and the facets count the matches (in the box, at
# the level); the candidates at the level are only counted, all of them and those without a footprint, so that
# the answer can say how many the box left out and how many no box can find. With a level chosen, the level
# facet counts the candidates in the box at every level, so that the menu still offers the others (their
# counts exact). A resource's level is that of its first sighting, or in the run searched (as the level filter
# reads it); its concepts are `about`, each concept with every concept above it. The page's rows come as one
# JSON array, each with the result's dataset count, footprint (its box, else the extent of its datasets) and
# most frequent concepts.
_SEARCH = f"""
WITH candidates AS {{materialized}} (
    SELECT r.id, {{rank}} AS rank, r.type, r.provider, r.last_status, r.about, {{level}} AS level,
           r.conformance, r.bbox IS NULL AS no_footprint, {{in_box}} AS in_box, {{at_level}} AS at_level,
           {_RELIABILITY} AS reliability, {_INSPIRE} AS inspire
    FROM {{source}}
    WHERE {{where}}
), matches AS NOT MATERIALIZED (
    SELECT * FROM candidates WHERE in_box AND at_level
), total AS (
    SELECT count(*) AS n FROM matches
), counted AS MATERIALIZED (
    SELECT m.* FROM matches m, total
    WHERE total.n <= %(exact_facets)s OR (hashint8(m.id) & 65535) < 65536::bigint * %(exact_facets)s / total.n
), scale AS (
    SELECT (SELECT n FROM total)::float8 / greatest(count(*), 1) AS f FROM counted
), page AS (
    SELECT id, rank, reliability, inspire FROM matches ORDER BY {{order}} LIMIT %(limit)s OFFSET %(offset)s
)
SELECT
    (SELECT n FROM total),
    {{unboxed}},
    ARRAY(SELECT ARRAY[type, {{count}}::text] FROM counted GROUP BY type ORDER BY count(*) DESC, type),
    ARRAY(SELECT ARRAY[provider, {{count}}::text] FROM counted WHERE provider IS NOT NULL
          GROUP BY provider ORDER BY count(*) DESC, provider LIMIT {TOP_PROVIDERS}),
    ARRAY(SELECT ARRAY[c, {{count}}::text] FROM (SELECT unnest(about) AS c FROM counted) t
          GROUP BY c ORDER BY count(*) DESC, c),
    {{levels}},
    ARRAY(SELECT ARRAY[last_status, {{count}}::text] FROM counted GROUP BY last_status ORDER BY last_status),
    ARRAY(SELECT ARRAY[conformance, {{count}}::text] FROM counted WHERE conformance IS NOT NULL
          GROUP BY conformance ORDER BY {_CONFORMANCE_ORDER.format(column="conformance")}),
    ARRAY(SELECT ARRAY[inspire, {{count}}::text] FROM counted WHERE inspire IS NOT NULL
          GROUP BY inspire ORDER BY {_INSPIRE_ORDER}),
    (SELECT json_agg(json_build_array(
         r.id, r.url, r.type, r.version, r.title, left(r.abstract, {ABSTRACT_CHARS}), r.provider, r.keywords,
         (SELECT count(*) FROM datasets d WHERE d.resource_id = r.id),
         r.level, r.source_page, r.keyword,
         ST_AsGeoJSON(coalesce(
             r.bbox, (SELECT ST_Envelope(ST_Collect(d.footprint)) FROM datasets d WHERE d.resource_id = r.id)
         ), {GEOJSON_DIGITS})::json,
         page.rank,
         r.last_status,
         ARRAY(SELECT c FROM datasets d, unnest(d.concepts) c WHERE d.resource_id = r.id
               GROUP BY c ORDER BY count(*) DESC, c LIMIT {TOP_CONCEPTS}),
         r.conformance,
         r.defects,
         json_build_object('checks_30d', coalesce(r.checks_30d, 0),
                           'availability_30d_percent', r.availability_30d_percent,
                           'response_median_seconds', round(r.response_median::numeric, 3),
                           'inspire_availability', {_VERDICT.format(column="inspire_availability")},
                           'inspire_getmap', {_VERDICT.format(column="inspire_getmap")}, 'inspire', page.inspire)
     ) ORDER BY {{outer}})
     FROM page JOIN resources r ON r.id = page.id)
"""
_COUNT = "round(count(*) * (SELECT f FROM scale))::bigint"  # a facet's count, scaled when sampled
_LEVELS = (
    "ARRAY(SELECT ARRAY[level, {count}] FROM {rows} WHERE level IS NOT NULL GROUP BY level ORDER BY level)"
)
# A run's sightings: one per resource (its primary key), at the level the run found it.
_FOUND_BY = " JOIN run_resources rr ON rr.resource_id = r.id AND rr.run_id = %(run)s"


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
    """The conditions of every filter but the box and the level, and their parameters."""
    params: dict = {}
    where = ["TRUE"]
    if query.text:
        params["text"] = query.text
        where.append(f"r.search @@ {text_query(query)}")
    if query.types:
        params["types"] = list(query.types)
        where.append("r.type = ANY(%(types)s)")
    if query.run is not None:  # the source joins its sightings (_FOUND_BY)
        params["run"] = query.run
    if query.concept is not None:  # through the GIN index of `about`
        params["concept"] = [query.concept]
        where.append("r.about @> %(concept)s::text[]")
    if query.provider is not None:
        params["provider"] = query.provider
        where.append("r.provider = %(provider)s")
    if query.conformance:
        params["conformance"] = list(query.conformance)
        where.append("r.conformance = ANY(%(conformance)s)")
    if query.min_availability is not None:
        params["min_availability"] = query.min_availability
        where.append("r.availability_30d_percent >= %(min_availability)s")
    if query.inspire:
        params["inspire"] = list(query.inspire)
        where.append(f"({_INSPIRE}) = ANY(%(inspire)s)")
    if query.no_footprint:
        where.append("r.bbox IS NULL")
    if query.answering:
        where.append(f"r.last_status <> '{ResourceStatus.DEAD}'")
    return where, params


def _levels(query: SearchQuery) -> str:
    """The level facet: the matches by level, or with a level chosen the candidates in the box by level,
    exactly; of a run searched for nothing else, its sightings alone (9 against 80 ms for 68,000 of them)."""
    if query.level is None:
        return _LEVELS.format(count=_COUNT, rows="counted")
    rows = "(SELECT level FROM candidates WHERE in_box) boxed"
    nothing_but_the_run = replace(query, level=None, limit=DEFAULT_LIMIT, offset=0) == SearchQuery(
        run=query.run
    )
    if query.run is not None and nothing_but_the_run:
        rows = "(SELECT level FROM run_resources WHERE run_id = %(run)s) sightings"
    return _LEVELS.format(count="count(*)", rows=rows)


def _at_level(query: SearchQuery) -> tuple[str, dict]:
    """The condition of the level, TRUE without one, and its parameter: in the run searched, else of the
    resource's first sighting, as each result shows."""
    if query.level is None:
        return "TRUE", {}
    return f"{_sighting(query)[0]} = %(level)s", {"level": query.level}


def _in_box(query: SearchQuery) -> tuple[str, dict]:
    """The condition of the box (two across the antimeridian), TRUE without one, and its parameters. The
    whole world meets every footprint: no box is tested then."""
    if query.bbox is None:
        return "TRUE", {}
    if query.boxes() == [WORLD]:
        return "r.bbox IS NOT NULL", {}
    boxes, params = _envelopes(query.boxes())
    return "(" + " OR ".join(f"ST_Intersects(r.bbox, {box})" for box in boxes) + ")", params


def search_statement(query: SearchQuery, exact_facets: int = EXACT_FACETS) -> tuple[str, dict]:
    """The statement and parameters of a search. Its one row: the total; the candidates (matches of every
    filter but the box; NULL without a box) and those of them without a footprint, as an array of two; the
    type, provider, concept, level, status, conformance and INSPIRE facets as arrays of [value, count], estimated
    above ``exact_facets`` matches (the level facet of a search at one level counts every level, exactly);
    and the page of results as a JSON array of rows, one row more than the page (so the caller knows whether
    another page follows)."""
    where, params = _filters(query)
    in_box, box_params = _in_box(query)
    at_level, level_params = _at_level(query)
    params.update(
        box_params | level_params, limit=query.limit + 1, offset=query.offset, exact_facets=exact_facets,
        reliable_checks=RELIABLE_CHECKS, reliable_percent=RELIABLE_PERCENT,
    )  # fmt: skip
    where_sql = "\n      AND ".join(where)
    source = _source(query, "resources" if query.text else "search_rows")
    rank, order, outer, materialized = "NULL::real", "id DESC", "r.id DESC", "NOT MATERIALIZED"
    if query.text:
        rank = f"ts_rank(r.search, {text_query(query)})"
        order = _ranked_order("rank", "reliability", "conformance", "id")
        outer = _ranked_order("page.rank", "page.reliability", "r.conformance", "r.id")
        materialized = "MATERIALIZED"
    # without a box, the matches without a footprint are among the matches
    unboxed = "ARRAY[NULL, (SELECT count(*) FROM matches WHERE no_footprint)]"
    if query.bbox:
        # two counts, not one pass: each may then be an index-only scan (of everything, of those without a
        # box: search_rows_no_footprint) where one pass reads every narrow row (7 against 23 ms on 100,000)
        unboxed = (
            "ARRAY[(SELECT count(*) FROM candidates WHERE at_level),"
            " (SELECT count(*) FROM candidates WHERE at_level AND no_footprint)]"
        )
    if query.bbox or query.level is not None:
        rank = f"CASE WHEN {in_box} AND {at_level} THEN {rank} END"  # only the matches are ranked
    sql = _SEARCH.format(
        materialized=materialized,
        rank=rank,
        level=_sighting(query)[0],
        source=source,
        where=where_sql,
        in_box=in_box,
        at_level=at_level,
        levels=_levels(query),
        order=order,
        outer=outer,
        unboxed=unboxed,
        count=_COUNT,
    )
    return sql, params


def chosen_statement(query: SearchQuery, limit: int) -> tuple[str, dict]:
    """The statement and parameters of the first ``limit`` matches (ranked, or newest first without text) as
    an export takes them (``geoweb.store.resources.Chosen``): rows of (resource_id, level, source_page,
    discovered_at): in the run searched, else the resource's first sighting."""
    where, params = _filters(query)
    in_box, box_params = _in_box(query)
    at_level, level_params = _at_level(query)
    where += [in_box, at_level]
    params.update(
        box_params | level_params, chosen_limit=limit, reliable_checks=RELIABLE_CHECKS,
        reliable_percent=RELIABLE_PERCENT,
    )  # fmt: skip
    order = "r.id DESC"
    if query.text:
        rank = f"ts_rank(r.search, {text_query(query)})"
        order = _ranked_order(rank, _RELIABILITY, "r.conformance", "r.id")
    where_sql = "\n      AND ".join(where)
    level, source_page, seen = _sighting(query)
    sql = (
        f"SELECT r.id AS resource_id, {level} AS level, {source_page} AS source_page, {seen} AS discovered_at\n"
        f"FROM {_source(query, 'resources')}\nWHERE {where_sql}\nORDER BY {order} LIMIT %(chosen_limit)s"
    )
    return sql, params


def _ranked_order(rank: str, reliability: str, conformance: str, resource_id: str) -> str:
    """The order of a text search's matches: by rank, equal ranks by reliability (``_RELIABILITY``), then
    by conformance, then the newest first."""
    conformance_order = _CONFORMANCE_ORDER.format(column=conformance)
    return f"{rank} DESC, {reliability}, {conformance_order}, {resource_id} DESC"


def _source(query: SearchQuery, table: str) -> str:
    """The table a search reads as ``r``, joined to the run's sightings as ``rr`` when it searches a run
    (``_filters`` reads them then)."""
    return f"{table} r" + (_FOUND_BY if query.run is not None else "")


def _sighting(query: SearchQuery) -> tuple[str, str, str]:
    """The columns of the sighting a result is shown and exported with: (level, source page, time), in the
    run searched, else of the resource's first sighting."""
    if query.run is not None:
        return "rr.level", "rr.source_page", "rr.discovered_at"
    return "r.level", "r.source_page", "r.first_seen"
