-- GeoHub shows, filters and ranks a search's matches by how reliably they answer (`resource_quality`, migration
-- 0020). Reading that view for every match would read every match's checks, and joining figures kept apart to
-- every match of a text search doubled its time (the matches' documents went into the join); so each resource
-- keeps its figures as of its last check in its own row, as it keeps its conformance (0017), and `search_rows`
-- gets them from the same trigger (0013, 0018). A trigger on `resource_checks` refreshes them whenever checks
-- are saved, whoever saves them. Only the view's columns of 0020 are read. Idempotent.
ALTER TABLE resources
    ADD COLUMN IF NOT EXISTS checks_30d integer,                  -- NULL: no check saved since this migration
    ADD COLUMN IF NOT EXISTS availability_30d_percent numeric,
    ADD COLUMN IF NOT EXISTS response_median double precision,   -- seconds, of its own request (below)
    ADD COLUMN IF NOT EXISTS inspire_availability text,
    ADD COLUMN IF NOT EXISTS inspire_getmap text;
ALTER TABLE search_rows
    ADD COLUMN IF NOT EXISTS checks_30d integer,
    ADD COLUMN IF NOT EXISTS availability_30d_percent numeric,
    ADD COLUMN IF NOT EXISTS response_median double precision,
    ADD COLUMN IF NOT EXISTS inspire_availability text,
    ADD COLUMN IF NOT EXISTS inspire_getmap text;

CREATE OR REPLACE FUNCTION geoweb_search_rows() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_rows (id, type, provider, last_status, level, bbox, about, conformance, checks_30d,
                             availability_30d_percent, response_median, inspire_availability, inspire_getmap)
    SELECT id, type, provider, last_status, level, bbox, about, conformance, checks_30d,
           availability_30d_percent, response_median, inspire_availability, inspire_getmap FROM changed
    ON CONFLICT (id) DO UPDATE
        SET (type, provider, last_status, level, bbox, about, conformance, checks_30d, availability_30d_percent,
             response_median, inspire_availability, inspire_getmap) = (EXCLUDED.type, EXCLUDED.provider,
            EXCLUDED.last_status, EXCLUDED.level, EXCLUDED.bbox, EXCLUDED.about, EXCLUDED.conformance,
            EXCLUDED.checks_30d, EXCLUDED.availability_30d_percent, EXCLUDED.response_median,
            EXCLUDED.inspire_availability, EXCLUDED.inspire_getmap)
        -- a revisit that only touches last_seen writes nothing here (geometry `=` is exact equality)
        WHERE (search_rows.type, search_rows.provider, search_rows.last_status, search_rows.level,
               search_rows.bbox, search_rows.about, search_rows.conformance, search_rows.checks_30d,
               search_rows.availability_30d_percent, search_rows.response_median,
               search_rows.inspire_availability, search_rows.inspire_getmap)
              IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.provider, EXCLUDED.last_status, EXCLUDED.level,
                                EXCLUDED.bbox, EXCLUDED.about, EXCLUDED.conformance, EXCLUDED.checks_30d,
                                EXCLUDED.availability_30d_percent, EXCLUDED.response_median,
                                EXCLUDED.inspire_availability, EXCLUDED.inspire_getmap);
    RETURN NULL;
END $$;

-- The response time shown is the median total time of the request that checks the resource: GetCapabilities
-- of an OGC service, the resource's own URL (GetResource) otherwise. A row is written only when a figure moved.
CREATE OR REPLACE FUNCTION geoweb_search_quality(resource_ids bigint[]) RETURNS void
    LANGUAGE sql AS $$
    UPDATE resources r
    SET (checks_30d, availability_30d_percent, response_median, inspire_availability, inspire_getmap) = (
        f.checks_30d, f.availability_30d_percent, f.response_median, f.inspire_availability, f.inspire_getmap)
    FROM (
        SELECT q.resource_id, q.checks_30d, q.availability_30d_percent,
               (coalesce(q.operations_30d -> 'GetCapabilities', q.operations_30d -> 'GetResource')
                   ->> 'total_median')::double precision AS response_median,
               q.inspire_availability, q.inspire_getmap
        FROM resource_quality q WHERE q.resource_id = ANY(resource_ids)
    ) f
    WHERE f.resource_id = r.id
      AND (r.checks_30d, r.availability_30d_percent, r.response_median, r.inspire_availability, r.inspire_getmap)
          IS DISTINCT FROM (f.checks_30d, f.availability_30d_percent, f.response_median, f.inspire_availability,
                            f.inspire_getmap);
$$;

CREATE OR REPLACE FUNCTION geoweb_search_quality_of_checks() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM geoweb_search_quality(ARRAY(SELECT DISTINCT resource_id FROM changed));
    RETURN NULL;
END $$;

-- Pruning deletes only checks older than the 30 days the figures read, so inserts alone change them.
DROP TRIGGER IF EXISTS resource_checks_search_quality ON resource_checks;
CREATE TRIGGER resource_checks_search_quality AFTER INSERT ON resource_checks REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_search_quality_of_checks();

SELECT geoweb_search_quality(ARRAY(
    SELECT DISTINCT resource_id FROM resource_checks WHERE checked_at > now() - interval '30 days'
));
