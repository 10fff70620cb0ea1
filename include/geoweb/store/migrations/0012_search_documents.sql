-- GeoHub search finds a resource by everything known of it: its own words (title, provider, keywords,
-- abstract, URLs), its datasets' names and titles, and the concepts its datasets are about with every concept
-- above them (their labels and synonyms: a dataset tagged river makes its service found by "watercourse",
-- "stream" and "water"). The datasets and the concepts live in other tables, so `search` is no longer a
-- generated column: triggers keep it, and `about`, right whenever a resource, its datasets or the ontology
-- change, whoever writes them.

-- Every concept above a concept through broader and partOf; the store fills it from the ontology
-- (load_concepts), here it is computed once for the concepts already loaded.
ALTER TABLE concepts ADD COLUMN ancestors text[] NOT NULL DEFAULT '{}';
WITH RECURSIVE up(id, ancestor) AS (
    SELECT c.id, a FROM concepts c, unnest(c.broader || c.part_of) a
    UNION
    SELECT up.id, a FROM up JOIN concepts c ON c.id = up.ancestor, unnest(c.broader || c.part_of) a
)
UPDATE concepts c SET ancestors = ARRAY(SELECT DISTINCT ancestor COLLATE "C" FROM up WHERE up.id = c.id ORDER BY 1);  -- as Python sorts

-- The concepts some dataset of a resource is about, and every concept above them: what the concept filter
-- and the concept facet read, one array per resource instead of its datasets.
ALTER TABLE resources ADD COLUMN about text[] NOT NULL DEFAULT '{}';
ALTER TABLE resources ALTER COLUMN search DROP EXPRESSION;
-- Documents of a few kilobytes stay in the row, uncompressed: ranking reads the document of every match, and
-- fetching each from the TOAST table made ranking three times slower (bench/README.md).
ALTER TABLE resources SET (toast_tuple_target = 8160);

CREATE FUNCTION geoweb_about(resource bigint) RETURNS text[]
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN ARRAY(
        SELECT DISTINCT c
        FROM (SELECT DISTINCT unnest(d.concepts) AS id FROM datasets d WHERE d.resource_id = resource) t
             LEFT JOIN concepts k ON k.id = t.id,
             unnest(t.id || coalesce(k.ancestors, '{}')) AS c
        ORDER BY c
    );

-- The names and titles of a resource's first 1,000 datasets (as many as its detail lists: a tsvector holds
-- at most 1 MB), each distinct one once.
CREATE FUNCTION geoweb_dataset_words(resource bigint) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (
        SELECT coalesce(string_agg(DISTINCT concat_ws(' ', d.name, d.title), ' '), '')
        FROM (SELECT name, title FROM datasets WHERE resource_id = resource ORDER BY position LIMIT 1000) d
    );

CREATE FUNCTION geoweb_concept_words(about text[]) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (
        SELECT coalesce(string_agg(concat_ws(' ', k.label, geoweb_words(k.alt_labels)), ' '), '')
        FROM concepts k WHERE k.id = ANY(about)
    );

-- The search document. Weights rank a match: A the title and the provider, B the keywords, the search keyword
-- that led to the resource and its datasets' names and titles, C the abstract and the concepts, D the URLs.
CREATE FUNCTION geoweb_search_document(r resources, about text[]) RETURNS tsvector
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN setweight(to_tsvector('english', coalesce(r.title, '')), 'A')
        || setweight(to_tsvector('english', coalesce(r.provider, '')), 'A')
        || setweight(to_tsvector('english', geoweb_words(r.keywords)), 'B')
        || setweight(to_tsvector('english', coalesce(r.keyword, '')), 'B')
        || setweight(to_tsvector('english', geoweb_dataset_words(r.id)), 'B')
        || setweight(to_tsvector('english', coalesce(r.abstract, '')), 'C')
        || setweight(to_tsvector('english', geoweb_concept_words(about)), 'C')
        || setweight(geoweb_url_words(r.url), 'D')
        || setweight(geoweb_url_words(r.source_page), 'D');

-- A resource's own words changed: its document, before the row is written.
CREATE FUNCTION geoweb_index_resource() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.about := geoweb_about(NEW.id);
    NEW.search := geoweb_search_document(NEW, NEW.about);
    RETURN NEW;
END $$;

-- Datasets changed (the `changed` transition table) or concepts did: the documents of their resources.
CREATE FUNCTION geoweb_reindex(resource_ids bigint[]) RETURNS void
    LANGUAGE sql AS $$
    UPDATE resources r SET (about, search) = (SELECT a, geoweb_search_document(r, a) FROM geoweb_about(r.id) a)
    WHERE r.id = ANY(resource_ids);
$$;

CREATE FUNCTION geoweb_reindex_datasets() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM geoweb_reindex(ARRAY(SELECT DISTINCT resource_id FROM changed));
    RETURN NULL;
END $$;

CREATE FUNCTION geoweb_reindex_concepts() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM geoweb_reindex(ARRAY(SELECT id FROM resources WHERE about && ARRAY(SELECT id FROM changed)));
    RETURN NULL;
END $$;

DROP INDEX resources_search;  -- rebuilt once below rather than updated row by row
UPDATE resources r SET about = geoweb_about(r.id);
UPDATE resources r SET search = geoweb_search_document(r, r.about);
CREATE INDEX resources_search ON resources USING gin (search);
CREATE INDEX resources_about ON resources USING gin (about);
CREATE INDEX resources_provider ON resources (provider);
-- The resources no box finds, counted in every answer.
CREATE INDEX resources_no_footprint ON resources (id) WHERE bbox IS NULL;

CREATE TRIGGER resources_index BEFORE INSERT OR UPDATE OF url, title, abstract, keywords, provider, keyword,
    source_page ON resources FOR EACH ROW EXECUTE FUNCTION geoweb_index_resource();
-- Transition tables allow one event per trigger.
CREATE TRIGGER datasets_reindex_inserted AFTER INSERT ON datasets REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_datasets();
CREATE TRIGGER datasets_reindex_updated AFTER UPDATE ON datasets REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_datasets();
CREATE TRIGGER datasets_reindex_deleted AFTER DELETE ON datasets REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_datasets();
CREATE TRIGGER concepts_reindex_inserted AFTER INSERT ON concepts REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_concepts();
CREATE TRIGGER concepts_reindex_updated AFTER UPDATE ON concepts REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_concepts();
CREATE TRIGGER concepts_reindex_deleted AFTER DELETE ON concepts REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION geoweb_reindex_concepts();
