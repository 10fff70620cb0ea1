"""The judged queries of the search benchmark and their scores, recall@20 and nDCG@10.

A resource is relevant to a query by what it is, never by what the search returns: the benchmark's generator
(bench/bench_search.py) makes each resource about one theme at one place with one provider, and records them
(``extra`` and ``provider``). A concept's query is judged by the concept and every concept below it ("water"
is hydrography: rivers, lakes, canals... are relevant, a resource that only mentions water in its abstract is
not); a provider's, a place's and a dataset name's by who published it, where it is and what it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from geoweb.geohub import SearchQuery, search
from geoweb.semantic import default_ontology

RECALL_AT = 20  # a page of results
NDCG_AT = 10

# (query, concept): labels, synonyms, broader concepts and prefixes as a user types them
CONCEPT_QUERIES = [
    ("river", "river"), ("lake", "lake"), ("canal", "canal"), ("reservoir", "reservoir"),
    ("wetland", "wetland"), ("road", "road"), ("railway", "railway"), ("forest", "forest"),
    ("building", "building"), ("school", "school"), ("glacier", "glacier"), ("soil", "soil"),
    ("population", "population"), ("earthquake", "earthquake"), ("airport", "airport"),
    ("water", "hydrography"), ("watercourse", "watercourse"), ("stream", "watercourse"),
    ("water body", "water_body"), ("transport", "transport"), ("land cover", "land_cover"),
    ("hazard", "hazard"), ("marsh", "wetland"), ("aquifer", "groundwater"), ("fluss", "river"),
    ("cryosphere", "cryosphere"), ("utility", "utility"),
    ("riv", "river"), ("lak", "lake"), ("reserv", "reservoir"), ("railw", "railway"), ("glac", "glacier"),
]  # fmt: skip
PROVIDER_POSITIONS = (5, 77, 150, 333, 401, 512, 640, 799)  # of the generator's providers
SAMPLES = (0.0001, 0.02, 0.3, 0.78)  # resources, as parts of the way through, whose place etc. are asked for


@dataclass(frozen=True, slots=True)
class Judged:
    """A query and what a relevant resource is: about one of ``themes``, at ``place``, of ``provider``
    (each None when it does not matter)."""

    kind: str
    text: str
    themes: tuple[str, ...] | None = None
    place: str | None = None
    provider: str | None = None


def below(concept: str) -> tuple[str, ...]:
    """The concept and every concept below it."""
    return tuple(sorted({concept, *default_ontology().descendants(concept)}))


def judged_queries(truth: list[tuple], providers: list[str]) -> list[Judged]:
    """The judged queries on the generated data: ``truth`` holds (n, theme, place, provider, title word) of
    each resource (bench_search.truth)."""
    queries = [Judged("concept", text, below(concept)) for text, concept in CONCEPT_QUERIES]
    queries += [Judged("provider", providers[i], provider=providers[i]) for i in PROVIDER_POSITIONS]
    for part in SAMPLES:
        _, theme, place, _, _ = truth[int(part * len(truth))]
        label = default_ontology().concepts[theme].label
        queries += [
            Judged("place", place, place=place),
            Judged("concept at a place", f"{label} {place}", below(theme), place),
            Judged("dataset name", f"{theme}_{place}", (theme,), place),
        ]
    return queries


_RELEVANT = """
SELECT id FROM resources
WHERE (%(themes)s::text[] IS NULL OR extra->>'theme' = ANY(%(themes)s::text[]))
  AND (%(place)s::text IS NULL OR extra->>'place' = %(place)s)
  AND (%(provider)s::text IS NULL OR provider = %(provider)s)
"""


def relevant(conn, judged: Judged) -> set[int]:
    """The ids of the resources relevant to the query, read from what they are."""
    themes = list(judged.themes) if judged.themes is not None else None
    with conn.cursor() as cur:
        cur.execute(_RELEVANT, {"themes": themes, "place": judged.place, "provider": judged.provider})
        return {row[0] for row in cur.fetchall()}


def ranked(conn, text: str) -> list[int]:
    """The ids of the first RECALL_AT results for ``text``, searched as the API searches it."""
    return [hit.id for hit in search(conn, SearchQuery.checked(text=text, limit=RECALL_AT)).results]


def recall(ranked: list[int], relevant_ids: set[int], k: int = RECALL_AT) -> float:
    """The share of the relevant resources in the first k, out of as many as k can hold."""
    return len(set(ranked[:k]) & relevant_ids) / min(k, len(relevant_ids))


def ndcg(ranked: list[int], relevant_ids: set[int], k: int = NDCG_AT) -> float:
    """Normalised discounted cumulative gain of the first k, each relevant resource a gain of 1."""
    gain = sum(1 / math.log2(i + 2) for i, id_ in enumerate(ranked[:k]) if id_ in relevant_ids)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant_ids))))
    return gain / ideal


def score(queries: list, relevant_of: Callable[[Any], set[int]], ranked: Callable[[str], list[int]]) -> dict:
    """recall@20 and nDCG@10 of each query (with its ``kind`` and ``text``), the mean of each kind of query
    and of all; ``relevant_of`` gives the ids of the resources relevant to a query, ``ranked`` the ids the
    search returns for a text, best first."""
    rows = []
    for judged in queries:
        ids, got = relevant_of(judged), ranked(judged.text)
        rows.append({"kind": judged.kind, "query": judged.text, "relevant": len(ids),
                     "recall@20": recall(got, ids), "ndcg@10": ndcg(got, ids)})  # fmt: skip
    kinds = {row["kind"] for row in rows} | {"all"}
    means = {
        kind: {
            metric: sum(r[metric] for r in rows if kind in ("all", r["kind"]))
            / sum(kind in ("all", r["kind"]) for r in rows)
            for metric in ("recall@20", "ndcg@10")
        }
        | {"queries": sum(kind in ("all", r["kind"]) for r in rows)}
        for kind in sorted(kinds)
    }
    return {"queries": rows, "means": means}
