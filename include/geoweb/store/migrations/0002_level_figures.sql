-- A run's per-level figures counted from its committed rows: URLs fetched or failed from the frontier,
-- resources from run_resources (each at the lowest level the run found it), seconds from the slowest
-- shard's saved statistics. A shard killed half-way and redone saves the statistics of its second part
-- only; the committed rows hold both parts, once each.
CREATE FUNCTION level_figures(run text)
    RETURNS TABLE (level integer, urls bigint, resources bigint, failures bigint, seconds double precision)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT parts.level, sum(parts.urls), sum(parts.resources), sum(parts.failures),
           coalesce(max(parts.seconds), 0)
    FROM (
        SELECT f.level, (f.status IN ('fetched', 'error'))::integer AS urls, 0 AS resources,
               (f.status = 'error')::integer AS failures, NULL::double precision AS seconds
        FROM frontier f WHERE f.run_id = run AND f.status <> 'discovered'
        UNION ALL
        SELECT rr.level, 0, 1, 0, NULL FROM run_resources rr WHERE rr.run_id = run
        UNION ALL
        SELECT cl.level, 0, 0, 0, cl.seconds FROM crawl_levels cl WHERE cl.run_id = run
    ) AS parts
    GROUP BY parts.level
    ORDER BY parts.level;
END;
