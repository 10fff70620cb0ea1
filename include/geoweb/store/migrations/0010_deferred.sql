-- URLs a crawl set aside with their host (time or failure budget, level deadline): kept with the reason,
-- never fetched in the run, and counted per level with their hosts.
ALTER TABLE frontier DROP CONSTRAINT frontier_status_check;
ALTER TABLE frontier ADD CONSTRAINT frontier_status_check
    CHECK (status IN ('discovered', 'fetched', 'error', 'skipped', 'deferred'));
CREATE INDEX frontier_deferred ON frontier (run_id, origin) WHERE status = 'deferred';

DROP FUNCTION level_figures(text);
CREATE FUNCTION level_figures(run text)
    RETURNS TABLE (level integer, urls bigint, resources bigint, failures bigint, seconds double precision,
                   deferred bigint, deferred_hosts bigint)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT parts.level, sum(parts.urls), sum(parts.resources), sum(parts.failures),
           coalesce(max(parts.seconds), 0), sum(parts.deferred), count(DISTINCT parts.deferred_origin)
    FROM (
        SELECT f.level, (f.status IN ('fetched', 'error'))::integer AS urls, 0 AS resources,
               (f.status = 'error')::integer AS failures, NULL::double precision AS seconds,
               (f.status = 'deferred')::integer AS deferred,
               CASE WHEN f.status = 'deferred' THEN f.origin END AS deferred_origin
        FROM frontier f WHERE f.run_id = run AND f.status <> 'discovered'
        UNION ALL
        SELECT rr.level, 0, 1, 0, NULL, 0, NULL FROM run_resources rr WHERE rr.run_id = run
        UNION ALL
        SELECT cl.level, 0, 0, 0, cl.seconds, 0, NULL FROM crawl_levels cl WHERE cl.run_id = run
    ) AS parts
    GROUP BY parts.level
    ORDER BY parts.level;
END;
