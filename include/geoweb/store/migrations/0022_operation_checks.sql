-- Operation checks: after a good check of a resource (its capabilities, landing page or file), one small
-- request of what it serves (GetMap, GetFeature, DescribeCoverage, an OGC API item, an ArcGIS export, the
-- first bytes of a file) is checked too, as a row of its own in resource_checks. Its outcome is 'ok' or
-- 'failed' (it has no fingerprint to change, and no say in the schedule); an odd but usable answer (a map all
-- one colour) is an 'ok' with a warning. resource_quality tells from the latest operation check whether a
-- resource's operations work: 'ok', 'failing' (it answered, its operation did not) or 'unchecked'. Operation
-- rows count in its availability (a WMS whose maps fail is not available), and its operations_30d has their
-- times per operation, GetMap's feeding the INSPIRE performance criterion. Idempotent: each object is
-- dropped if present and made again.

ALTER TABLE resource_checks DROP CONSTRAINT IF EXISTS resource_checks_outcome_check;
ALTER TABLE resource_checks ADD CONSTRAINT resource_checks_outcome_check
    CHECK (outcome IN ('unchanged', 'changed', 'failed', 'ok'));
ALTER TABLE resource_checks ADD COLUMN IF NOT EXISTS warning text;  -- what an 'ok' check found amiss

-- resource_quality as 0020 made it, with the operations' status, last error and warning.
DROP VIEW IF EXISTS resource_quality;
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
            ELSE 'not met' END AS inspire_getmap,
       CASE WHEN op.outcome IS NULL THEN 'unchecked' WHEN op.outcome = 'failed' THEN 'failing' ELSE 'ok' END
           AS operations_status,
       CASE WHEN op.outcome = 'failed'
            THEN op.operation || ' ' || coalesce(op.error_reason, 'failed') || coalesce(': ' || op.error_message, '')
       END AS operations_error,
       op.warning AS operations_warning
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
) c ON true
-- the latest operation check of the last 30 days (those run only after the resource itself answered)
LEFT JOIN LATERAL (
    SELECT k.outcome, k.operation, k.error_reason, k.error_message, k.warning
    FROM resource_checks k
    WHERE k.resource_id = r.id AND k.checked_at > now() - interval '30 days'
      AND k.operation NOT IN ('GetCapabilities', 'GetResource')
    ORDER BY k.checked_at DESC, k.id DESC
    LIMIT 1
) op ON true;
