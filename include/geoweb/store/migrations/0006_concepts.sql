-- Semantic categories: each dataset's concepts (ids of the ontology, geoweb/semantic/ontology.json), and the
-- ontology itself as a table, so that SQL users can join labels and walk broader/partOf. The store loads the
-- table from the shipped ontology after migrating (Store.migrate), so a new ontology needs no migration.

ALTER TABLE datasets ADD COLUMN concepts text[] NOT NULL DEFAULT '{}';
CREATE INDEX datasets_concepts ON datasets USING gin (concepts);

CREATE TABLE concepts (
    id         text PRIMARY KEY,
    label      text NOT NULL,
    alt_labels text[] NOT NULL DEFAULT '{}',
    broader    text[] NOT NULL DEFAULT '{}',  -- ids of more general concepts (a canal is a watercourse)
    part_of    text[] NOT NULL DEFAULT '{}'   -- ids of wholes (a bridge is part of a road)
);
