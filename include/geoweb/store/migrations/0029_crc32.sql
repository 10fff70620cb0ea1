-- CRC-32 of a text's UTF-8 bytes, as Python's zlib.crc32 computes it: the shard of an origin
-- (geoweb.store.frontier.shard_of), for the links a run carries over in SQL (Frontier.carry_over). Bit by bit:
-- it is computed once per origin of a batch, not per link.
CREATE OR REPLACE FUNCTION geoweb_crc32(value text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    bytes bytea := convert_to(value, 'UTF8');
    crc bigint := 4294967295;
BEGIN
    FOR i IN 0 .. length(bytes) - 1 LOOP
        crc := crc # get_byte(bytes, i);
        FOR k IN 1 .. 8 LOOP
            crc := (crc >> 1) # (3988292384 * (crc & 1));
        END LOOP;
    END LOOP;
    RETURN crc # 4294967295;
END
$$;
