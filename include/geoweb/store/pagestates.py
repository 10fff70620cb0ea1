"""The ``page_states`` table: what each crawl remembers of its URLs between runs (``geoweb.crawl.pagestates``),
read for the URLs a shard is about to fetch and written as their pages are committed."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping

import psycopg2
from psycopg2.extras import execute_values

from geoweb.crawl.pagestates import Brief, PageState, RevisitKey, page_state, revisit_cutoff, state_values
from geoweb.store.frontier import url_hash
from geoweb.store.repository import PAGE_SIZE, Repository, error_line, sql_array

log = logging.getLogger(__name__)

CUTOFF_BATCH = 10_000  # states read per round trip when a run draws its revisit cutoff

# the states ``s`` of a crawl (%s) by their URLs' keys (%s), looked up one by one (``frontier.PLANNED_KEY``)
_BY_KEY = """
FROM unnest(%s::bigint[]) AS asked(url_hash) CROSS JOIN LATERAL (
    SELECT url, state FROM page_states
    WHERE crawl = (SELECT %s) AND geoweb_url_hash(url) = asked.url_hash OFFSET 0
) s
"""
LOAD = f"SELECT s.url, s.state {_BY_KEY}"

# The scalars of a state, cast in SQL so that the driver converts them in C rather than decoding a JSON value
# of each; the links and resources are left in the database
SCALARS = {
    "visits": "bigint",
    "changes": "bigint",
    "visited_at": "float8",
    "visit_seconds": "float8",
    "level": "bigint",
    "read_at": "float8",
    "gone_runs": "bigint",
    "readers": "text",
    "size": "bigint",
}
_SCALAR_COLUMNS = ", ".join(f"(state->>'{name}')::{sql_type}" for name, sql_type in SCALARS.items())

# ``pagestates.Brief`` of the states of a crawl (%s) by their URLs' keys (%s)
BRIEFS = f"""
SELECT s.url, {_SCALAR_COLUMNS}, coalesce(jsonb_array_length(state->'resources') > 0, false),
    (state->'admitted'->>'level')::int, state->'admitted'->>'by' {_BY_KEY}
"""

_UPSERT = """
INSERT INTO page_states (crawl, url, state) VALUES %s
ON CONFLICT (crawl, geoweb_url_hash(url)) DO UPDATE SET state = EXCLUDED.state, updated_at = now()
"""


class PageStatesTable(Repository):
    """The crawls' memories of their URLs."""

    def load(self, crawl: str, urls: Iterable[str]) -> dict[str, PageState]:
        """The states ``crawl`` keeps of ``urls`` (those it has)."""
        asked = set(urls)
        with self._transaction() as cur:
            cur.execute(LOAD, (sql_array(url_hash(url) for url in asked), crawl))
            # a row of another URL with the same key is not one asked for
            return dict(_sound(crawl, ((url, state) for url, state in cur.fetchall() if url in asked)))

    def briefs(self, crawl: str, urls: Iterable[str]) -> dict[str, Brief]:
        """``Brief`` of the states ``crawl`` keeps of ``urls`` (those it has). Where a value does not cast,
        the states are read whole instead, and a damaged one is left out (``load``)."""
        asked = set(urls)
        try:
            with self._transaction() as cur:
                cur.execute(BRIEFS, (sql_array(url_hash(url) for url in asked), crawl))
                return {
                    url: Brief(_scalar_state(scalars), resources, level, by)
                    for url, *scalars, resources, level, by in cur.fetchall()
                    if url in asked
                }
        except psycopg2.DataError as exc:
            _reading_whole(crawl, exc)
        return {url: _brief(state) for url, state in self.load(crawl, asked).items()}

    def save(self, crawl: str, states: Mapping[str, PageState], gone: Iterable[str] = ()) -> None:
        """Keep ``states`` for ``crawl``, and forget the URLs ``gone`` (they answered 404 or 410), in one
        transaction; rows in URL order, so concurrent shards lock them in one order."""
        rows = [(crawl, url, json.dumps(state_values(states[url]))) for url in sorted(states)]
        with self._transaction() as cur:
            if rows:
                execute_values(cur, _UPSERT, rows, page_size=PAGE_SIZE)
            if gone:  # few: URLs that answered 404 or 410 in two runs
                cur.executemany(
                    "DELETE FROM page_states WHERE crawl = %s AND geoweb_url_hash(url) = %s AND url = %s",
                    [(crawl, url_hash(url), url) for url in sorted(gone)],
                )

    def revisit_cutoff(
        self, crawl: str, budget: int | None, now: float, budget_bytes: int | None = None
    ) -> RevisitKey | None:
        """The revisit key of the last URL ``crawl`` keeps that a run asks again, within ``budget`` URLs and
        ``budget_bytes`` (``pagestates.revisit_cutoff``), its states streamed with what the order needs and
        nothing more."""
        try:
            with self.conn, self.conn.cursor(name="revisit_cutoff") as cur:
                cur.itersize = CUTOFF_BATCH
                cur.execute(f"SELECT url, {_SCALAR_COLUMNS} FROM page_states WHERE crawl = %s", (crawl,))
                kept = ((url, _scalar_state(values)) for url, *values in cur)
                return revisit_cutoff(kept, now, budget, budget_bytes)
        except psycopg2.DataError as exc:
            _reading_whole(crawl, exc)
        with self.conn, self.conn.cursor(name="revisit_cutoff_whole") as cur:
            cur.itersize = CUTOFF_BATCH
            cur.execute("SELECT url, state FROM page_states WHERE crawl = %s", (crawl,))
            return revisit_cutoff(_sound(crawl, cur), now, budget, budget_bytes)

    def forget_unreached(self, crawl: str, seconds: float) -> int:
        """Forget the URLs of ``crawl`` no run has reached for ``seconds`` (``pagestates.UNREACHED_SECONDS``):
        nothing the crawl reaches links to them. Returns how many."""
        with self._transaction() as cur:
            cur.execute(
                "DELETE FROM page_states WHERE crawl = %s AND updated_at < now() - make_interval(secs => %s)",
                (crawl, seconds),
            )
            return cur.rowcount

    def count(self, crawl: str) -> int:
        with self._transaction() as cur:
            cur.execute("SELECT count(*) FROM page_states WHERE crawl = %s", (crawl,))
            return cur.fetchone()[0]


def _sound(crawl: str, rows: Iterable[tuple[str, dict]]) -> Iterator[tuple[str, PageState]]:
    """(url, state) of the rows whose state is sound; a damaged one is logged and left out, its page read as
    new and its state written anew."""
    for url, values in rows:
        try:
            yield url, page_state(values)
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning(
                "crawl %s: the kept state of %s is damaged (%s); the page is read as new", crawl, url, exc
            )


def _reading_whole(crawl: str, exc: psycopg2.DataError) -> None:
    log.warning("crawl %s: a kept state does not read brief (%s); reading them whole", crawl, error_line(exc))


def _brief(state: PageState) -> Brief:
    admitted = state.admitted or {}
    return Brief(state, bool(state.resources), admitted.get("level"), admitted.get("by"))


def _scalar_state(values: list) -> PageState:
    """A PageState of the ``SCALARS`` read (those the state has), without links or resources."""
    return page_state({name: value for name, value in zip(SCALARS, values, strict=True) if value is not None})
