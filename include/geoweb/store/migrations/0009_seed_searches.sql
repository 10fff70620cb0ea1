-- The web searches a run's seeding has finished: a retried seed_search task skips them, so that no search
-- quota is spent twice. A search that failed half-way is not here; it is done again whole (the frontier
-- keeps its first hits once).
CREATE TABLE seed_searches (
    run_id      text NOT NULL REFERENCES crawl_runs ON DELETE CASCADE,
    provider    text NOT NULL,  -- the connector's name in the run's search_providers
    keyword     text NOT NULL,
    records     integer NOT NULL,  -- search hits or portal datasets read
    searched_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, provider, keyword)
);
