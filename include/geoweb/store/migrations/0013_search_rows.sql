-- GeoHub search counts every match of a search by type, provider, status, level and concept, and without text
-- it finds them by those columns and the box alone. Read from `resources`, that meant rows of several
-- kilobytes each (the search document stays in the row: migration 0012); `search_rows` holds only those
-- columns, one narrow row per resource (about 200 bytes), kept by a trigger whoever writes `resources`
-- (the reindexing of migration 0012 updates `about` there too, so dataset and ontology changes reach it).
CREATE TABLE search_rows (
    id          bigint PRIMARY KEY REFERENCES resources ON DELETE CASCADE,
    type        text NOT NULL,
    provider    text,
    last_status text NOT NULL,
    level       integer,
    bbox        geometry(Geometry, 4326),
    about       text[] NOT NULL
);

CREATE FUNCTION geoweb_search_rows() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_rows (id, type, provider, last_status, level, bbox, about)
    SELECT id, type, provider, last_status, level, bbox, about FROM changed
    ON CONFLICT (id) DO UPDATE
        SET (type, provider, last_status, level, bbox, about) = (EXCLUDED.type, EXCLUDED.provider,
            EXCLUDED.last_status, EXCLUDED.level, EXCLUDED.bbox, EXCLUDED.about)
        -- a revisit that only touches last_seen writes nothing here (geometry `=` is exact equality)
        WHERE (search_rows.type, search_rows.provider, search_rows.last_status, search_rows.level,
               search_rows.bbox, search_rows.about)
              IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.provider, EXCLUDED.last_status, EXCLUDED.level,
                                EXCLUDED.bbox, EXCLUDED.about);
    RETURN NULL;
END $$;

INSERT INTO search_rows SELECT id, type, provider, last_status, level, bbox, about FROM resources;
CREATE INDEX search_rows_bbox ON search_rows USING gist (bbox);
CREATE INDEX search_rows_about ON search_rows USING gin (about);
CREATE INDEX search_rows_provider ON search_rows (provider);
CREATE INDEX search_rows_no_footprint ON search_rows (id) WHERE bbox IS NULL;

-- Deletes cascade through the foreign key. Transition tables allow one event per trigger.
CREATE TRIGGER resources_search_rows_inserted AFTER INSERT ON resources REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_search_rows();
CREATE TRIGGER resources_search_rows_updated AFTER UPDATE ON resources REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_search_rows();
