"""GeoHub search latency on 100,000 resources and 1,000,000 datasets in PostGIS.

Generates the data with SQL (generate_series, seeded) into a scratch database with the store's schema, then
times typical searches over a few hundred requests in random order (p50, p95, the largest), twice: in the
process, as the API's handler runs them (``geoweb.geohub``: pooled connection, statement, rows, records),
and over HTTP through a real Airflow API server with the GeoHub plugin (login, validation, JSON included).

    .venv/bin/python -m bench.bench_search                   # generate (about 1 min) or reuse, then measure
    .venv/bin/python -m bench.bench_search --regenerate      # new data
    .venv/bin/python -m bench.bench_search --resources 10000 --requests 100 --no-http   # quick
    .venv/bin/python -m bench.bench_search --drop            # remove the scratch database

The local PostgreSQL (``python -m stack``) is started if it is down, and stopped at the end if it was; its
superuser creates the scratch database. The data: each resource is about one theme (a most specific concept
of the ontology) at one made-up place and has one of 800 providers, which its title ("lake of katori", a
synonym of the theme at times), its dataset names (``lake_katori_3``) and its datasets' concepts (four in
five tagged with the theme) say, and which ``extra`` records for the judged queries (bench/search_relevance.py);
keywords and titles add words that name no concept, abstracts and dataset titles any geospatial term, frequent
ones more often (so that queries match from a few to 80,000 resources); resource boxes over the world from
0.03 to 30 degrees wide (2% world-wide), each resource's datasets inside its box (WPS and CSW, 15%, have
neither); five runs that found each resource at levels 0 to 5.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import closing
from urllib.parse import urlsplit

import psycopg2
from psycopg2.extras import execute_values

from bench import search_relevance
from geoweb.geohub import SearchDatabase, SearchQuery, search
from geoweb.semantic import default_ontology
from geoweb.store import Store
from stack import postgres as stack_postgres
from stack.layout import GEOWEB_DB, REPO
from tests.geohub.server import GeoHubServer, geohub_server

SCRATCH = "geoweb_bench_search"
RESULTS = REPO / "var" / "bench" / "results-search.json"
HOME = REPO / "var" / "bench" / "geohub-airflow"  # the API server's AIRFLOW_HOME
SEED = 0.42
RUNS = 5

# Words of titles, keywords and abstracts: geospatial terms, then 8,000 made-up place names (the long tail).
TERMS = """
map data water river land use soil road boundary administrative elevation forest population census
climate rainfall temperature flood coast geology transport building parcel cadastre orthophoto imagery
satellite vegetation habitat protected area wetland lake groundwater aquifer station monitoring air
quality noise energy wind solar agriculture crop fishery marine ocean bathymetry seabed sediment erosion
landslide earthquake fault volcano hazard risk zoning planning urban rural settlement address postal
health hospital school education tourism heritage archaeology mining mineral oil gas pipeline power
grid railway airport port harbour shipping traffic accident bicycle path trail park recreation hunting
biodiversity species bird mammal fish insect plant invasive drought irrigation reservoir dam canal
catchment basin watershed discharge gauge precipitation snow glacier ice permafrost sea level tide
wave current salinity chlorophyll plankton coral reef mangrove estuary delta floodplain terrain slope
aspect contour hillshade lidar dem dsm mosaic tile grid hexagon statistics income employment housing
poverty migration election district municipality county province region state nation border customs
military defence emergency shelter evacuation fire wildfire burn scar smoke pollution emission waste
landfill recycling sewage treatment plant drinking supply network pipe valve hydrant meter telecom
antenna coverage broadband fibre cable satellite navigation gps geodesy benchmark datum projection
toponym placename gazetteer historic topographic thematic inventory survey sample plot transect
""".split()
_SYLLABLES = "ka to ri mo sa ne lu vi da pe go shi ra no te mi ba ku zo fe".split()
NAMES = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES]
# What a resource is about: the most specific concepts (nothing below them), the first ones more often.
THEMES = sorted(c.id for c in default_ontology() if not default_ontology().descendants(c.id))
_CONCEPT_WORDS = {
    w for c in default_ontology() for label in c.labels for w in re.findall(r"\w+", label.lower())
}
NEUTRAL = [t for t in TERMS if t not in _CONCEPT_WORDS]  # words of titles and keywords that name no concept
# 800 providers: a two-syllable name (never a place's) and a kind of body that names no concept either
_BODIES = ["Mapping Agency", "Survey Office", "Geoportal", "Regional Council", "Statistics Bureau",
           "Data Service", "Municipality", "Institute"]  # fmt: skip
PROVIDERS = [f"{(a + b).capitalize()} {_BODIES[(i + k) % len(_BODIES)]}"
             for i, (a, b) in enumerate((a, b) for a in _SYLLABLES for b in _SYLLABLES) for k in (0, 3)]  # fmt: skip
# The word of rank k (TERMS, then NAMES): a function, so that no big array is copied for every word drawn.
_WORD_FUNCTION = f"""
CREATE FUNCTION pg_temp.word(k integer) RETURNS text LANGUAGE sql IMMUTABLE
RETURN CASE WHEN k < {len(TERMS)} THEN (%(terms)s::text[])[k + 1]
            ELSE (%(syllables)s::text[])[1 + (k - {len(TERMS)}) / 400]
                 || (%(syllables)s::text[])[1 + (k - {len(TERMS)}) / 20 %% 20]
                 || (%(syllables)s::text[])[1 + (k - {len(TERMS)}) %% 20] END;
"""
# The word of rank k is drawn about (k + 1)^(-2/3) times as often as the first: "map" is in 80% of the
# resources, "water" in a quarter, a term near the end of TERMS in 2%, a place name in 0.1 to 0.5%.
_WORD = f"pg_temp.word(floor(power(random(), 3) * {len(TERMS) + len(NAMES)})::int)"
_NEUTRAL = f"(%(neutral)s::text[])[1 + floor(power(random(), 2) * {len(NEUTRAL)})::int]"
TYPES = ("WMS", "WMS", "WMS", "WFS", "WFS", "WCS", "WMTS", "WPS", "SOS", "CSW", "KML", "KML", "SHAPEFILE")

GENERATE = f"""
SELECT setseed(%(seed)s);
{_WORD_FUNCTION}
CREATE TEMP TABLE shape AS
SELECT n, (%(types)s::text[])[1 + n %% %(type_count)s] AS type, random() * 360 - 180 AS cx,
       random() * 135 - 60 AS cy,
       CASE WHEN random() < 0.02 THEN 360 ELSE power(10, random() * 3 - 1.5) END AS size
FROM generate_series(1, %(resources)s) n;

INSERT INTO crawl_runs (run_id, status, started_at, finished_at)
SELECT 'bench_run_' || i, 'success', now() - i * interval '1 day', now() - i * interval '1 day' + interval '1 hour'
FROM generate_series(1, {RUNS}) i;

INSERT INTO resources (url, type, version, title, abstract, keywords, provider, bbox, source_page, keyword,
                       level, extra)
SELECT format('https://gis%%s.%%s.example.org/ows/%%s/service', n %% 5000, pg_temp.word(n %% 97), n),
       type, '1.3.0',
       t.word || ' of ' || t.place
           || coalesce((SELECT ' ' || string_agg({_NEUTRAL}, ' ') FROM generate_series(1, n %% 3)), ''),
       (SELECT string_agg({_WORD}, ' ') FROM generate_series(1, 15 + (n %% 25))),
       (SELECT array_agg({_NEUTRAL}) FROM generate_series(1, 1 + (n %% 6))),
       t.provider,
       CASE WHEN type NOT IN ('WPS', 'CSW') THEN
           ST_MakeEnvelope(greatest(cx - size / 2, -180), greatest(cy - size / 4, -90),
                           least(cx + size / 2, 180), least(cy + size / 4, 90), 4326) END,
       format('https://portal%%s.example.net/%%s/links.html', n %% 3000, pg_temp.word(n %% 53)),
       CASE WHEN n %% 4 = 0 THEN pg_temp.word(n %% 211) END,
       n %% 6,
       jsonb_build_object('theme', t.theme, 'place', t.place)
FROM shape JOIN truth t USING (n)
ORDER BY n;

-- 1 to 19 datasets per resource (10 on average), each inside its resource's box
INSERT INTO datasets (resource_id, position, name, title, keywords, footprint, concepts)
SELECT r.id, p, format('%%s_%%s_%%s', t.theme, t.place, p),
       (SELECT string_agg({_WORD}, ' ') FROM generate_series(1, 1 + (p %% 4))),
       ARRAY[pg_temp.word((r.id + p)::integer %% 150)],
       CASE WHEN r.type NOT IN ('WPS', 'CSW') THEN
           ST_MakeEnvelope(x, y, least(x + width, 180), least(y + width / 2, 90), 4326) END,
       CASE WHEN random() < 0.8 THEN ARRAY[t.theme] ELSE '{{}}' END  -- as the tagger misses some
FROM resources r JOIN shape s ON s.n = r.id JOIN truth t ON t.n = r.id,
     LATERAL generate_series(0, (r.id * 7919) %% 19) p,
     LATERAL (SELECT s.size * random() * 0.5 AS width) size,
     LATERAL (SELECT greatest(s.cx - s.size / 2, -180) + random() * s.size * 0.5 AS x,
                     greatest(s.cy - s.size / 4, -90) + random() * s.size * 0.25 AS y) corner;

-- each resource found by three or four of the five runs, at levels 0 to 5, from per-run pages
INSERT INTO run_resources (run_id, resource_id, level, source_page, discovered_at)
SELECT 'bench_run_' || i, r.id, (r.id + i) %% 6,
       format('https://links%%s.example.com/%%s.html', (r.id + i) %% 2000, r.id), now()
FROM resources r, generate_series(1, {RUNS}) i
WHERE (r.id + i) %% 5 NOT IN (0, 3) OR r.id %% 2 = 0;
"""

# Typical searches: words at several frequencies, with a type, in a box, with both, a run, deep pages.
QUERIES: dict[str, dict] = {
    "text, common word": {"text": "forest"},
    "text, rare word": {"text": "gazetteer"},
    "text, place name": {"text": NAMES[3000]},
    "text, two words": {"text": "flood risk"},
    "text + type": {"text": "river", "types": ["WMS"]},
    "bbox, country": {"bbox": (5.9, 45.8, 10.5, 47.8)},
    "bbox, continent": {"bbox": (-10.0, 35.0, 30.0, 60.0)},
    "bbox, world": {"bbox": (-180.0, -90.0, 180.0, 90.0)},
    "text + bbox": {"text": "soil", "bbox": (-10.0, 35.0, 30.0, 60.0)},
    "text + type + bbox": {"text": "elevation", "types": ["WCS", "WMS"], "bbox": (100.0, 0.0, 140.0, 40.0)},
    "text, a prefix (`glac`)": {"text": "glac"},
    "text, a provider": {"text": PROVIDERS[77]},
    "concept + text": {"text": "survey", "concept": "hydrography"},
    "host address": {"text": f"gis17.{TERMS[17]}.example.org"},
    "run + level": {"run": "bench_run_2", "level": 3},
    "text, page 5": {"text": "soil", "offset": 80},
    "browse, page 50": {"offset": 1000},
}
# Words in a quarter and in 80% of the resources: stop words in all but name, measured apart.
STRESS: dict[str, dict] = {
    "text, word in 25%": {"text": "water"},
    "text, word in 80%": {"text": "map"},
    "word in 25% + bbox": {"text": "water", "bbox": (-10.0, 35.0, 30.0, 60.0)},
}


def scratch_dsn() -> str:
    return urlsplit(GEOWEB_DB)._replace(path=f"/{SCRATCH}").geturl()


def drop() -> None:
    stack_postgres.drop_database(SCRATCH)


def counts(dsn: str) -> tuple[int, int] | None:
    """(resources, datasets) of the scratch database, or None when it does not exist or holds data of an
    older generator (without each resource's theme)."""
    try:
        with closing(psycopg2.connect(dsn)) as conn, conn.cursor() as cur:
            cur.execute(
                "SELECT (SELECT count(*) FROM resources), (SELECT count(*) FROM datasets), "
                "EXISTS (SELECT 1 FROM resources WHERE extra ? 'theme')"
            )
            resources, datasets, themed = cur.fetchone()
            return (resources, datasets) if themed else None
    except psycopg2.Error:
        return None


def generate(resources: int, name: str = SCRATCH) -> float:
    """Creates the scratch database (or ``name``), migrates it and fills it; returns the seconds it took."""
    started = time.monotonic()
    stack_postgres.drop_database(name)
    dsn = stack_postgres.create_postgis_database(name)
    with Store(dsn) as store:
        store.migrate()
    params = {"seed": SEED, "terms": TERMS, "syllables": _SYLLABLES, "resources": resources,
              "types": list(TYPES), "type_count": len(TYPES), "neutral": NEUTRAL}  # fmt: skip
    with closing(psycopg2.connect(dsn)) as conn, conn, conn.cursor() as cur:
        cur.execute(
            "CREATE TEMP TABLE truth (n integer PRIMARY KEY, theme text, place text, provider text, word text)"
        )
        execute_values(cur, "INSERT INTO truth VALUES %s", truth(resources), page_size=10_000)
        cur.execute(GENERATE, params)
    with stack_postgres.superuser(name) as cur:
        cur.execute("VACUUM ANALYZE")
    return time.monotonic() - started


def migrate(dsn: str) -> None:
    """Brings a kept scratch database to the store's schema (a migration since its generation builds what it
    adds from the rows already there)."""
    with Store(dsn) as store:
        applied = store.migrate()
    if applied:
        print(f"migrated: {', '.join(applied)}", file=sys.stderr)
        with stack_postgres.superuser(SCRATCH) as cur:
            cur.execute("VACUUM ANALYZE")


def truth(resources: int) -> list[tuple]:
    """What each resource is, seeded: (n, theme, place, provider, the theme's word in its title: its label,
    or one of its synonyms two times in five)."""
    rng, ontology = random.Random(SEED), default_ontology()
    rows = []
    for n in range(1, resources + 1):
        theme = ontology.concepts[THEMES[int(rng.random() ** 2 * len(THEMES))]]
        word = rng.choice(theme.alt_labels) if theme.alt_labels and rng.random() < 0.4 else theme.label
        place = NAMES[int(rng.random() ** 2 * len(NAMES))]
        rows.append((n, theme.id, place, PROVIDERS[n % len(PROVIDERS)], word))
    return rows


Client = Callable[[SearchQuery], None]  # runs one search


def in_process(database: SearchDatabase) -> Client:
    """What the API's handler runs: a pooled connection, the statement, the rows, the result records."""

    def run(query: SearchQuery) -> None:
        with database.connection() as conn:
            search(conn, query)

    return run


def over_http(server: GeoHubServer) -> Client:
    """GET /geohub/api/search of the real API server, logged in with a bearer token."""
    session = server.session(server.token())
    url = f"{server.base_url}/geohub/api/search"

    def run(query: SearchQuery) -> None:
        bbox = ",".join(map(str, query.bbox)) if query.bbox else None
        params = {"q": query.text, "type": list(query.types), "bbox": bbox, "run": query.run,
                  "level": query.level, "concept": query.concept, "provider": query.provider,
                  "limit": query.limit, "offset": query.offset}  # fmt: skip
        session.get(url, params=params, timeout=30).raise_for_status()

    return run


def measure(client: Client, queries: dict[str, dict], requests: int, rng: random.Random) -> dict:
    """Milliseconds per search, by kind, over ``requests`` searches in random order after one warm-up
    round (the first search of a kind reads its index pages from disk)."""
    checked = {kind: SearchQuery.checked(**q) for kind, q in queries.items()}
    for query in checked.values():
        client(query)
    times: dict[str, list[float]] = {kind: [] for kind in checked}
    for _ in range(requests):
        kind = rng.choice(list(checked))
        started = time.perf_counter()
        client(checked[kind])
        times[kind].append((time.perf_counter() - started) * 1000)
    figures = {kind: _figures(ts) for kind, ts in times.items() if ts}
    figures["all"] = _figures([t for ts in times.values() for t in ts])
    return figures


def matches(conn, query: SearchQuery) -> int:
    """How many resources the query matches in all."""
    return search(conn, query).total


def relevance(conn, resources: int) -> dict:
    """recall@20 and nDCG@10 of the judged queries (bench/search_relevance.py), each searched as the API
    searches it."""
    queries = search_relevance.judged_queries(truth(resources), PROVIDERS)
    return search_relevance.score(
        queries,
        lambda judged: search_relevance.relevant(conn, judged),
        lambda text: search_relevance.ranked(conn, text),
    )


def _figures(ms: list[float]) -> dict:
    ordered = sorted(ms)
    return {
        "n": len(ordered),
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--resources", type=int, default=100_000, help="datasets: 10 per resource")
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--no-http", dest="http", action="store_false", help="skip the API server")
    parser.add_argument("--drop", action="store_true", help="drop the scratch database and exit")
    args = parser.parse_args(argv)
    started = not stack_postgres.running()
    if started:
        stack_postgres.start()
    try:
        if args.drop:
            drop()
        else:
            run(args.resources, args.requests, args.regenerate, args.http)
    finally:
        if started:
            stack_postgres.stop()
    return 0


def run(resources: int, requests: int, regenerate: bool, http: bool) -> None:
    dsn = scratch_dsn()
    have = counts(dsn)
    if regenerate or have is None or have[0] != resources:
        print(f"generating {resources:,} resources ...", file=sys.stderr)
        print(f"generated in {generate(resources):.0f} s", file=sys.stderr)
        have = counts(dsn)
    else:
        migrate(dsn)
    database = SearchDatabase(lambda: dsn)
    groups = {"typical searches": (QUERIES, requests), "frequent words": (STRESS, max(30, requests // 10))}
    results: dict = {"resources": have[0], "datasets": have[1]}
    try:
        with database.connection() as conn:
            found = {kind: matches(conn, SearchQuery.checked(**q)) for kind, q in (QUERIES | STRESS).items()}
            results["relevance"] = relevance(conn, resources)
        results["in the process"] = {
            group: measure(in_process(database), queries, n, random.Random(i))
            for i, (group, (queries, n)) in enumerate(groups.items())
        }
    finally:
        database.close()
    if http:
        HOME.mkdir(parents=True, exist_ok=True)
        with geohub_server(dsn, HOME) as server:
            client = over_http(server)
            results["over HTTP"] = {
                group: measure(client, queries, n, random.Random(i))
                for i, (group, (queries, n)) in enumerate(groups.items())
            }
    print(f"{results['resources']:,} resources, {results['datasets']:,} datasets")
    for where in ("in the process", "over HTTP"):
        for group, figures in results.get(where, {}).items():
            print(
                f"\n{group + ', ' + where:<34} {'matches':>8} {'n':>4} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}"
            )
            for kind, f in figures.items():
                print(
                    f"{kind:<34} {found.get(kind, ''):>8} {f['n']:>4} {f['p50']:>7.1f} {f['p95']:>7.1f} {f['max']:>7.1f}"
                )
    means = results["relevance"]["means"]
    print(f"\n{'relevance, judged queries':<34} {'n':>4} {'recall@20':>9} {'nDCG@10':>8}")
    for kind, m in means.items():
        print(f"{kind:<34} {m['queries']:>4} {m['recall@20']:>9.3f} {m['ndcg@10']:>8.3f}")
    results["matches"] = found
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
