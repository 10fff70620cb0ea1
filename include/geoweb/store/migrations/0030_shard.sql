-- The shard of an origin among ``shards``: the first 32 bits of its MD5, as geoweb.store.frontier.shard_of
-- computes it, for the links a run carries over in SQL (Frontier.carry_over). md5() runs in C: cheap enough
-- for every row a carry writes.
CREATE OR REPLACE FUNCTION geoweb_shard(origin text, shards integer) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN (('x' || left(md5(origin), 8))::bit(32)::bigint % shards)::integer;

DROP FUNCTION geoweb_crc32(text);
