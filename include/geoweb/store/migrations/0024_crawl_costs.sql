-- What each crawl task spent and saved: requests sent, bytes read, pages read new to the crawl or changed since
-- its last run, pages gone (404, 410), pages carried over from the last run (a 304, the same bytes, or not
-- asked: not due) and the bytes those carried over unread would have cost. One row per task (run, the level it was planned at, shard); a retried task adds
-- its attempt, so the row counts all that was spent.
CREATE TABLE IF NOT EXISTS crawl_costs (
    run_id text NOT NULL REFERENCES crawl_runs (run_id) ON DELETE CASCADE,
    level int NOT NULL,
    shard int NOT NULL,
    requests bigint NOT NULL DEFAULT 0,
    bytes_read bigint NOT NULL DEFAULT 0,
    new_pages bigint NOT NULL DEFAULT 0,
    changed_pages bigint NOT NULL DEFAULT 0,
    gone_pages bigint NOT NULL DEFAULT 0,
    not_modified bigint NOT NULL DEFAULT 0,
    same_bytes bigint NOT NULL DEFAULT 0,
    not_due bigint NOT NULL DEFAULT 0,
    bytes_saved bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, level, shard)
);

-- The crawl a run continues (HarvestParams.crawl_name): its runs' costs are plotted side by side.
ALTER TABLE crawl_runs ADD COLUMN IF NOT EXISTS crawl text;
CREATE INDEX IF NOT EXISTS crawl_runs_crawl ON crawl_runs (crawl, started_at);
