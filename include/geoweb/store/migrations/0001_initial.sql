-- The harvest schema: crawl runs and their per-level statistics, resources with their datasets, and the
-- crawl frontier (the crawl state). Unique keys make every load an upsert, so a redone level never
-- duplicates a row.

CREATE EXTENSION IF NOT EXISTS postgis;

-- Keywords as one string for the full-text columns: array_to_string is only STABLE, and generated columns
-- need IMMUTABLE expressions.
CREATE FUNCTION geoweb_words(words text[]) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_to_string(words, ' ');

CREATE TABLE crawl_runs (
    run_id      text PRIMARY KEY,
    status      text NOT NULL,
    params      jsonb NOT NULL DEFAULT '{}',
    summary     jsonb,
    report_png  bytea,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);

-- One row per level and shard; a level's figures are the sums over its shards.
CREATE TABLE crawl_levels (
    run_id    text NOT NULL REFERENCES crawl_runs ON DELETE CASCADE,
    level     integer NOT NULL,
    shard     integer NOT NULL,
    urls      integer NOT NULL,
    resources integer NOT NULL,
    failures  integer NOT NULL,
    seconds   double precision NOT NULL,
    PRIMARY KEY (run_id, level, shard)
);

CREATE TABLE resources (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url            text NOT NULL,  -- canonical: an OGC endpoint without service, request, version
    type           text NOT NULL,
    version        text,
    title          text,
    abstract       text,
    keywords       text[] NOT NULL DEFAULT '{}',
    provider       text,
    bbox           geometry(Geometry, 4326),  -- the WGS84 box: a polygon, or a point or line when degenerate
    extra          jsonb NOT NULL DEFAULT '{}',
    content_sha256 text,  -- of the capabilities document or file that proved it: revisits compare it
    -- where, how deep and through which search keyword it was first found (per run: run_resources)
    source_page    text,
    keyword        text,
    level          integer,
    first_seen     timestamptz NOT NULL DEFAULT now(),
    last_seen      timestamptz NOT NULL DEFAULT now(),
    last_status    text NOT NULL DEFAULT 'ok',
    search         tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(to_tsvector('english', geoweb_words(keywords)), 'B')
        || setweight(to_tsvector('english', coalesce(abstract, '')), 'C')
        || setweight(to_tsvector('simple', url), 'D')
    ) STORED,
    UNIQUE (url, type)
);
CREATE INDEX resources_bbox ON resources USING gist (bbox);
CREATE INDEX resources_search ON resources USING gin (search);
CREATE INDEX resources_type ON resources (type);

-- Keyed by position in the resource's document, not by name: KML folders and WMS layers may lack a name
-- or repeat one.
CREATE TABLE datasets (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    resource_id bigint NOT NULL REFERENCES resources ON DELETE CASCADE,
    position    integer NOT NULL,
    name        text,
    title       text,
    keywords    text[] NOT NULL DEFAULT '{}',
    footprint   geometry(Geometry, 4326),
    extra       jsonb NOT NULL DEFAULT '{}',
    search      tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(to_tsvector('english', geoweb_words(keywords)), 'B')
        || setweight(to_tsvector('simple', coalesce(name, '')), 'C')
    ) STORED,
    UNIQUE (resource_id, position)
);
CREATE INDEX datasets_footprint ON datasets USING gist (footprint);
CREATE INDEX datasets_search ON datasets USING gin (search);
CREATE INDEX datasets_name ON datasets (resource_id, name);

-- What each run found, at the lowest level it found it.
CREATE TABLE run_resources (
    run_id        text NOT NULL REFERENCES crawl_runs ON DELETE CASCADE,
    resource_id   bigint NOT NULL REFERENCES resources ON DELETE CASCADE,
    level         integer NOT NULL,
    source_page   text,
    discovered_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, resource_id)
);
CREATE INDEX run_resources_resource ON run_resources (resource_id);

-- The crawl state: every URL of a run once (the frontier owns URL dedup), with what became of it.
CREATE TABLE frontier (
    run_id        text NOT NULL REFERENCES crawl_runs ON DELETE CASCADE,
    url           text NOT NULL,
    level         integer NOT NULL,
    shard         integer NOT NULL,
    origin        text NOT NULL,
    source_page   text,
    keyword       text,
    status        text NOT NULL DEFAULT 'discovered'
        CHECK (status IN ('discovered', 'fetched', 'error', 'skipped')),
    error_reason  text,
    error_message text,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, url)
);
CREATE INDEX frontier_work ON frontier (run_id, level, shard, status);
CREATE INDEX frontier_origin ON frontier (run_id, origin);
