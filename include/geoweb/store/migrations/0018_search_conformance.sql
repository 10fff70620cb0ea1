-- GeoHub filters and counts a search by conformance (migration 0017) too; without text it reads `search_rows`,
-- so the narrow row holds the level as well, kept by the same trigger (migration 0013), whoever writes.
ALTER TABLE search_rows ADD COLUMN conformance text;

CREATE OR REPLACE FUNCTION geoweb_search_rows() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_rows (id, type, provider, last_status, level, bbox, about, conformance)
    SELECT id, type, provider, last_status, level, bbox, about, conformance FROM changed
    ON CONFLICT (id) DO UPDATE
        SET (type, provider, last_status, level, bbox, about, conformance) = (EXCLUDED.type,
            EXCLUDED.provider, EXCLUDED.last_status, EXCLUDED.level, EXCLUDED.bbox, EXCLUDED.about,
            EXCLUDED.conformance)
        -- a revisit that only touches last_seen writes nothing here (geometry `=` is exact equality)
        WHERE (search_rows.type, search_rows.provider, search_rows.last_status, search_rows.level,
               search_rows.bbox, search_rows.about, search_rows.conformance)
              IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.provider, EXCLUDED.last_status, EXCLUDED.level,
                                EXCLUDED.bbox, EXCLUDED.about, EXCLUDED.conformance);
    RETURN NULL;
END $$;

UPDATE search_rows s SET conformance = r.conformance
FROM resources r
WHERE r.id = s.id AND r.conformance IS NOT NULL;
