-- GeoHub search: a resource is also found by where it was found. Its `search` document gains the search
-- keyword that led to it and the page that linked to it, and URLs are indexed as words too, so that a host
-- name, a path word or a pasted address matches. One column, so that a search ranks one stored document
-- (concatenating two at query time doubled the time of frequent words).

-- A URL as search words: whole (host, path: the tokens of the `simple` parser) and split into words (a
-- pasted address is searched as the phrase of its words).
CREATE FUNCTION geoweb_url_words(url text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('simple', coalesce(url, ''))
        || to_tsvector('english', regexp_replace(coalesce(url, ''), '[^[:alnum:]]+', ' ', 'g'));

ALTER TABLE resources DROP COLUMN search;  -- and its index
ALTER TABLE resources ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', coalesce(title, '')), 'A')
    || setweight(to_tsvector('english', geoweb_words(keywords)), 'B')
    || setweight(to_tsvector('english', coalesce(keyword, '')), 'B')
    || setweight(to_tsvector('english', coalesce(abstract, '')), 'C')
    || setweight(geoweb_url_words(url), 'D')
    || setweight(geoweb_url_words(source_page), 'D')
) STORED;
CREATE INDEX resources_search ON resources USING gin (search);

-- The level filter within a run (the primary key leads with run_id, then resource_id).
CREATE INDEX run_resources_run_level ON run_resources (run_id, level);
