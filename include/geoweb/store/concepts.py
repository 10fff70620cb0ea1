"""The ``concepts`` table: the shipped ontology as rows, replaced whole after each migration."""

from __future__ import annotations

from psycopg2.extras import execute_values

from geoweb.semantic import Ontology, default_ontology

_UPSERT = """
INSERT INTO concepts (id, label, alt_labels, broader, part_of) VALUES %s
ON CONFLICT (id) DO UPDATE SET
    label = EXCLUDED.label, alt_labels = EXCLUDED.alt_labels, broader = EXCLUDED.broader,
    part_of = EXCLUDED.part_of
"""


def load_concepts(conn, ontology: Ontology | None = None) -> int:
    """Make the ``concepts`` table equal the ontology (the shipped one by default), in one transaction;
    returns the number of concepts. Datasets keep the ids they were tagged with."""
    ontology = ontology or default_ontology()
    rows = [(c.id, c.label, list(c.alt_labels), list(c.broader), list(c.part_of)) for c in ontology]
    with conn, conn.cursor() as cur:
        cur.execute("LOCK TABLE concepts IN SHARE ROW EXCLUSIVE MODE")  # workers starting together
        execute_values(cur, _UPSERT, rows)
        cur.execute("DELETE FROM concepts WHERE NOT id = ANY(%s)", ([r[0] for r in rows],))
    return len(rows)
