-- Every check measured, and each resource's quality figures. A check row now says which request it measured
-- (its operation) and how that request answered: time to first byte, total time, bytes. The history stays
-- queryable at scale: raw checks are kept for a window of days (prune_resource_checks), older ones are
-- summed per resource, day and operation in resource_check_days; the change events (changed, dead, revived,
-- datasets added or removed) are never pruned.

ALTER TABLE resource_checks
    ADD COLUMN operation          text,
    ADD COLUMN first_byte_seconds double precision,  -- the answering request, until its headers arrived
    ADD COLUMN total_seconds      double precision,  -- the answering request, until its body was read
    ADD COLUMN bytes              bigint;            -- body bytes received, as sent
UPDATE resource_checks c
SET operation = CASE WHEN r.type IN ('WMS', 'WFS', 'WCS', 'WMTS', 'WPS', 'SOS', 'CSW')
                     THEN 'GetCapabilities' ELSE 'GetResource' END
FROM resources r WHERE r.id = c.resource_id;
ALTER TABLE resource_checks ALTER COLUMN operation SET NOT NULL;

-- Rows arrive in time order, so a BRIN index finds a time range (what pruning deletes) in a few kB.
CREATE INDEX resource_checks_checked_at ON resource_checks USING brin (checked_at);

-- Pruned checks, one row per resource, UTC day and operation. Times are of successful checks.
CREATE TABLE resource_check_days (
    resource_id         bigint NOT NULL REFERENCES resources ON DELETE CASCADE,
    day                 date NOT NULL,
    operation           text NOT NULL,
    checks              integer NOT NULL,
    successes           integer NOT NULL,
    changes             integer NOT NULL,
    last_success_at     timestamptz,
    first_byte_median   double precision,
    first_byte_p95      double precision,
    total_median        double precision,
    total_p95           double precision,
    bytes               bigint,
    PRIMARY KEY (resource_id, day, operation)
);

-- Moves the checks older than ``keep`` (whole UTC days) into resource_check_days and deletes them from
-- resource_checks, except change events; returns how many rows were deleted. Days before the last summed
-- day were summed by an earlier call: only the days after it are read, so an event row is summed once.
CREATE FUNCTION prune_resource_checks(keep interval) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz := date_trunc('day', now() - keep, 'UTC');
    summed_before timestamptz;
    pruned bigint;
BEGIN
    IF keep < interval '31 days' THEN
        RAISE EXCEPTION 'keep at least 31 days of checks, not %: resource_quality reads the last 30', keep;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('prune_resource_checks'));
    SELECT coalesce((max(day) + 1)::timestamp AT TIME ZONE 'UTC', '-infinity') INTO summed_before
    FROM resource_check_days;
    INSERT INTO resource_check_days
    SELECT resource_id, (checked_at AT TIME ZONE 'UTC')::date, operation, count(*),
           count(*) FILTER (WHERE outcome <> 'failed'), count(*) FILTER (WHERE outcome = 'changed'),
           max(checked_at) FILTER (WHERE outcome <> 'failed'),
           percentile_cont(0.5) WITHIN GROUP (ORDER BY first_byte_seconds) FILTER (WHERE outcome <> 'failed'),
           percentile_cont(0.95) WITHIN GROUP (ORDER BY first_byte_seconds) FILTER (WHERE outcome <> 'failed'),
           percentile_cont(0.5) WITHIN GROUP (ORDER BY total_seconds) FILTER (WHERE outcome <> 'failed'),
           percentile_cont(0.95) WITHIN GROUP (ORDER BY total_seconds) FILTER (WHERE outcome <> 'failed'),
           sum(bytes)
    FROM resource_checks
    WHERE checked_at >= summed_before AND checked_at < cutoff
    GROUP BY 1, 2, 3;
    DELETE FROM resource_checks
    WHERE checked_at >= summed_before AND checked_at < cutoff AND outcome <> 'changed' AND details = '{}';
    GET DIAGNOSTICS pruned = ROW_COUNT;
    RETURN pruned;
END
$$;

-- Per resource and operation, over the last 30 days: checks, successes, and the times of the successful ones
-- (the 90th percentile of the first byte: INSPIRE's "normal situation", 90 % of the time).
CREATE VIEW resource_operation_quality AS
SELECT resource_id, operation, count(*) AS checks_30d,
       count(*) FILTER (WHERE outcome <> 'failed') AS successes_30d,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY first_byte_seconds) FILTER (WHERE outcome <> 'failed')
           AS first_byte_median,
       percentile_cont(0.9) WITHIN GROUP (ORDER BY first_byte_seconds) FILTER (WHERE outcome <> 'failed')
           AS first_byte_p90,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY first_byte_seconds) FILTER (WHERE outcome <> 'failed')
           AS first_byte_p95,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY total_seconds) FILTER (WHERE outcome <> 'failed')
           AS total_median,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY total_seconds) FILTER (WHERE outcome <> 'failed')
           AS total_p95
FROM resource_checks
WHERE checked_at > now() - interval '30 days'
GROUP BY resource_id, operation;

-- Per resource: availability over 7 and 30 days (percent of successful checks, with the number of checks),
-- times per operation, last success, and the INSPIRE view-service criteria for a WMS, each with its rule.
-- A criterion judged on fewer than 24 checks is 'not enough checks'.
CREATE VIEW resource_quality AS
SELECT r.id AS resource_id, r.type, r.url,
       c.checks_7d,
       round(100.0 * c.successes_7d / nullif(c.checks_7d, 0), 2) AS availability_7d_percent,
       c.checks_30d,
       round(100.0 * c.successes_30d / nullif(c.checks_30d, 0), 2) AS availability_30d_percent,
       greatest(
           (SELECT max(k.checked_at) FROM resource_checks k WHERE k.resource_id = r.id AND k.outcome <> 'failed'),
           (SELECT max(d.last_success_at) FROM resource_check_days d WHERE d.resource_id = r.id)
       ) AS last_success_at,
       (SELECT jsonb_object_agg(o.operation, jsonb_build_object(
                   'checks', o.checks_30d, 'successes', o.successes_30d,
                   'first_byte_median', round(o.first_byte_median::numeric, 3),
                   'first_byte_p95', round(o.first_byte_p95::numeric, 3),
                   'total_median', round(o.total_median::numeric, 3),
                   'total_p95', round(o.total_p95::numeric, 3)))
        FROM resource_operation_quality o WHERE o.resource_id = r.id) AS operations_30d,
       CASE WHEN r.type = 'WMS' THEN 'INSPIRE view service availability: at least 99 % of checks successful '
                                     'over 30 days, judged on 24 checks or more' END AS inspire_availability_rule,
       CASE WHEN r.type <> 'WMS' THEN NULL
            WHEN c.checks_30d < 24 THEN 'not enough checks'
            WHEN c.successes_30d >= 0.99 * c.checks_30d THEN 'met'
            ELSE 'not met' END AS inspire_availability,
       CASE WHEN r.type = 'WMS' THEN 'INSPIRE view service performance: GetMap first byte within 5 s in 90 % '
                                     'of successful GetMap checks over 30 days, judged on 24 checks or more'
       END AS inspire_getmap_rule,
       CASE WHEN r.type <> 'WMS' THEN NULL
            WHEN c.getmap_timed_successes_30d < 24 THEN 'not enough checks'
            WHEN c.getmap_first_byte_p90 <= 5 THEN 'met'
            ELSE 'not met' END AS inspire_getmap
FROM resources r
-- lateral: a read of some resources scans only their checks, through (resource_id, checked_at)
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE k.checked_at > now() - interval '7 days') AS checks_7d,
           count(*) FILTER (WHERE k.checked_at > now() - interval '7 days' AND k.outcome <> 'failed')
               AS successes_7d,
           count(*) AS checks_30d, count(*) FILTER (WHERE k.outcome <> 'failed') AS successes_30d,
           count(k.first_byte_seconds) FILTER (WHERE k.operation = 'GetMap' AND k.outcome <> 'failed')
               AS getmap_timed_successes_30d,
           percentile_cont(0.9) WITHIN GROUP (ORDER BY k.first_byte_seconds)
               FILTER (WHERE k.operation = 'GetMap' AND k.outcome <> 'failed') AS getmap_first_byte_p90
    FROM resource_checks k
    WHERE k.resource_id = r.id AND k.checked_at > now() - interval '30 days'
) c ON true;
