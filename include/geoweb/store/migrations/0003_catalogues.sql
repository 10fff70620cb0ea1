-- Outside sources harvested on a schedule: catalogues (CSW), data portals and satellite-image archives.
-- Each source keeps its harvest state; catalogue records and archive scenes are keyed by (source, id), so
-- every load is an upsert and a redone harvest never duplicates a row.

-- One row per source (a catalogue, a portal, an archive): where it is and how its last harvest went.
CREATE TABLE catalogue_sources (
    name              text PRIMARY KEY,  -- e.g. csw:<url>, nspo, stac:<url>
    kind              text NOT NULL,     -- the connector: csw, nspo, stac, datagov, ckan...
    url               text NOT NULL,
    watermark         timestamptz,       -- the newest modification (records) or acquisition (scenes) loaded
    last_harvest      timestamptz,
    last_full_harvest timestamptz,       -- the last complete full harvest: the only one that withdraws
    last_status       text CHECK (last_status IN ('running', 'success', 'failed')),
    last_error        text,
    last_counts       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX catalogue_sources_kind ON catalogue_sources (kind);

-- A record of a catalogue or portal. A record gone from a complete full harvest is withdrawn, never deleted;
-- it becomes active again if it comes back.
CREATE TABLE catalogue_records (
    source       text NOT NULL,
    identifier   text NOT NULL,
    title        text,
    abstract     text,
    keywords     text[] NOT NULL DEFAULT '{}',
    footprint    geometry(Geometry, 4326),
    links        jsonb NOT NULL DEFAULT '[]',  -- [{url, protocol, name}]
    modified     timestamptz,                  -- as the source says
    keyword      text,                         -- the search keyword that produced it (portals)
    extra        jsonb NOT NULL DEFAULT '{}',
    status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'withdrawn')),
    first_seen   timestamptz NOT NULL DEFAULT now(),
    last_seen    timestamptz NOT NULL DEFAULT now(),
    changed_at   timestamptz NOT NULL DEFAULT now(),  -- when its content last changed here
    withdrawn_at timestamptz,
    search       tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(to_tsvector('english', geoweb_words(keywords)), 'B')
        || setweight(to_tsvector('english', coalesce(abstract, '')), 'C')
    ) STORED,
    PRIMARY KEY (source, identifier)
);
CREATE INDEX catalogue_records_footprint ON catalogue_records USING gist (footprint);
CREATE INDEX catalogue_records_search ON catalogue_records USING gin (search);
CREATE INDEX catalogue_records_identifier ON catalogue_records (identifier);

-- One row per record identifier across catalogues (catalogues harvest each other): the active copy modified
-- last, with every source that holds it.
CREATE VIEW catalogue_records_unique AS
SELECT DISTINCT ON (identifier)
    identifier, source, title, abstract, keywords, footprint, links, modified, status,
    array_agg(source) OVER (PARTITION BY identifier) AS sources
FROM catalogue_records
ORDER BY identifier, status = 'active' DESC, modified DESC NULLS LAST, last_seen DESC, source;

-- Scene metadata of a satellite-image archive.
CREATE TABLE archive_scenes (
    source        text NOT NULL,
    scene_id      text NOT NULL,
    satellite     text,
    sensor        text,
    acquired_at   timestamptz NOT NULL,
    footprint     geometry(Geometry, 4326),  -- the scene's polygon (or multipolygon across the antimeridian)
    cloud_cover   double precision CHECK (cloud_cover BETWEEN 0 AND 100),  -- percent
    quicklook_url text,
    extra         jsonb NOT NULL DEFAULT '{}',
    first_seen    timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, scene_id)
);
CREATE INDEX archive_scenes_footprint ON archive_scenes USING gist (footprint);
CREATE INDEX archive_scenes_acquired ON archive_scenes (source, acquired_at);
