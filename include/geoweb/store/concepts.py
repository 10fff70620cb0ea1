"""The ``concepts`` table: the shipped ontology as rows, replaced whole after each migration. Only rows that
change are written: a changed concept re-indexes the resources about it (migration 0012)."""

from __future__ import annotations

from psycopg2.extras import execute_values

from geoweb.semantic import Ontology, default_ontology

_UPSERT = """
INSERT INTO concepts AS c (id, label, alt_labels, broader, part_of, ancestors) VALUES %s
ON CONFLICT (id) DO UPDATE SET
    label = EXCLUDED.label, alt_labels = EXCLUDED.alt_labels, broader = EXCLUDED.broader,
    part_of = EXCLUDED.part_of, ancestors = EXCLUDED.ancestors
WHERE (c.label, c.alt_labels, c.broader, c.part_of, c.ancestors)
    IS DISTINCT FROM (EXCLUDED.label, EXCLUDED.alt_labels, EXCLUDED.broader, EXCLUDED.part_of, EXCLUDED.ancestors)
"""


def load_concepts(conn, ontology: Ontology | None = None) -> int:
    """Make the ``concepts`` table equal the ontology (the shipped one by default), in one transaction;
    returns the number of concepts. Datasets keep the ids they were tagged with."""
    ontology = ontology or default_ontology()
    rows = [(c.id, c.label, list(c.alt_labels), list(c.broader), list(c.part_of), _ancestors(ontology, c.id))
            for c in ontology]  # fmt: skip
    with conn, conn.cursor() as cur:
        cur.execute("LOCK TABLE concepts IN SHARE ROW EXCLUSIVE MODE")  # workers starting together
        execute_values(cur, _UPSERT, rows)
        cur.execute("DELETE FROM concepts WHERE NOT id = ANY(%s)", ([r[0] for r in rows],))
    return len(rows)


def _ancestors(ontology: Ontology, concept_id: str) -> list[str]:
    return sorted(ontology.ancestors(concept_id))  # in the order the migration sorts them (COLLATE "C")
