-- Revisits: each known resource's schedule (when to check it next, how it has behaved) and the history of
-- its checks. A resource that stops answering becomes 'dead'; no revisit ever deletes a row.

CREATE TABLE resource_schedule (
    resource_id      bigint PRIMARY KEY REFERENCES resources ON DELETE CASCADE,
    state            text NOT NULL DEFAULT 'alive' CHECK (state IN ('alive', 'dead')),
    next_check_at    timestamptz NOT NULL,
    interval_seconds double precision NOT NULL CHECK (interval_seconds > 0),  -- learned from its changes
    failures         integer NOT NULL DEFAULT 0,  -- failed checks in a row
    checks           integer NOT NULL DEFAULT 0,
    changes          integer NOT NULL DEFAULT 0,
    fingerprint      text,  -- of the last good check: the document's sha256 (or of what a Range read saw)
    last_checked_at  timestamptz,
    last_outcome     text
);
CREATE INDEX resource_schedule_due ON resource_schedule (next_check_at);

-- The change history: one row per check.
CREATE TABLE resource_checks (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id    bigint NOT NULL REFERENCES resources ON DELETE CASCADE,
    run_id         text,  -- the revisit run (DAG run id, or cli-<time>)
    checked_at     timestamptz NOT NULL DEFAULT now(),
    outcome        text NOT NULL CHECK (outcome IN ('unchanged', 'changed', 'failed')),
    http_status    integer,
    error_reason   text,
    error_message  text,
    content_sha256 text,
    seconds        double precision NOT NULL,
    details        jsonb NOT NULL DEFAULT '{}'  -- datasets added and removed, dead, revived
);
CREATE INDEX resource_checks_resource ON resource_checks (resource_id, checked_at);
