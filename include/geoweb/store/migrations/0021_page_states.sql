-- What a crawl remembers of each URL between its runs (geoweb.crawl.pagestates): the validators its server
-- sent, its body's signature, the links it gave and the resources found in it, its visit history. A run of
-- the same crawl asks again with the validators and carries over what did not change. One row per URL of a
-- crawl, keyed as the frontier keys URLs (a 64-bit hash), the state as JSON.
CREATE TABLE page_states (
    crawl text NOT NULL,
    url text NOT NULL,
    state jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX page_states_key ON page_states (crawl, geoweb_url_hash(url));
