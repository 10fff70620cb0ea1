-- GeoHub shows, filters and ranks a search's matches by how reliably they answer (`resource_quality`, migration
-- 0020). Reading that view for every match would read every match's checks; `search_rows` keeps each resource's
-- figures as of its last check instead, refreshed by a trigger whenever checks are saved, whoever saves them.
-- Only the view's columns of 0020 are read. Idempotent: every object is created if missing or replaced.
ALTER TABLE search_rows
    ADD COLUMN IF NOT EXISTS checks_30d integer,                  -- NULL: no check saved since this migration
    ADD COLUMN IF NOT EXISTS availability_30d_percent numeric,
    ADD COLUMN IF NOT EXISTS response_median double precision,   -- seconds, of its own request (below)
    ADD COLUMN IF NOT EXISTS inspire_availability text,
    ADD COLUMN IF NOT EXISTS inspire_getmap text;

-- The response time shown is the median total time of the request that checks the resource: GetCapabilities
-- of an OGC service, the resource's own URL (GetResource) otherwise.
CREATE OR REPLACE FUNCTION geoweb_search_quality(resource_ids bigint[]) RETURNS void
    LANGUAGE sql AS $$
    UPDATE search_rows s
    SET (checks_30d, availability_30d_percent, response_median, inspire_availability, inspire_getmap) = (
        q.checks_30d, q.availability_30d_percent,
        (coalesce(q.operations_30d -> 'GetCapabilities', q.operations_30d -> 'GetResource') ->> 'total_median')
            ::double precision,
        q.inspire_availability, q.inspire_getmap)
    FROM resource_quality q
    WHERE q.resource_id = s.id AND s.id = ANY(resource_ids);
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
