-- A record is found by its identifier through an index: CSW GetRecordById, OGC API - Records' single items
-- and the quality of a page of them (catalogue/records.py) read a few records of the view each, which took a
-- scan of every resource while the identifier was a concatenation no index could hold. The identifier is the
-- same text, from a function fit for an index; the view's columns stay as they were (CREATE OR REPLACE).
CREATE OR REPLACE FUNCTION geoweb_record_identifier(resource_id bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 'urn:geoweb:resource:' || resource_id::text;
CREATE INDEX IF NOT EXISTS resources_record_identifier ON resources (geoweb_record_identifier(id));

CREATE OR REPLACE VIEW pycsw_record_columns AS
SELECT geoweb_record_identifier(r.id) AS identifier,
       'csw:Record' AS typename,
       'urn:geoweb:harvest' AS schema,  -- not csw's own: pycsw writes every record from these columns
       'harvest' AS mdsource,
       to_char(r.first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS insert_date,
       xmlserialize(DOCUMENT xmlelement(
           NAME "csw:Record",
           xmlattributes('http://www.opengis.net/cat/csw/2.0.2' AS "xmlns:csw",
                         'http://purl.org/dc/elements/1.1/' AS "xmlns:dc",
                         'http://purl.org/dc/terms/' AS "xmlns:dct"),
           xmlelement(NAME "dc:identifier", geoweb_record_identifier(r.id)),
           xmlelement(NAME "dc:title", coalesce(geoweb_xml_text(r.title), r.url)),
           xmlelement(NAME "dc:type", CASE WHEN geoweb_is_file(r.type) THEN 'dataset' ELSE 'service' END),
           xmlelement(NAME "dc:format", r.type),
           xmlelement(NAME "dct:abstract", geoweb_xml_text(r.abstract)),
           xmlelement(NAME "dct:references", xmlattributes(geoweb_link_protocol(r.type) AS scheme), r.url)
       ) AS text) AS xml,
       concat_ws(' ', r.title, r.abstract, r.provider, array_to_string(r.keywords, ' '), r.url) AS anytext,
       r.search AS anytext_tsvector,
       NULL::text AS language,
       coalesce(geoweb_xml_text(r.title), r.url) AS title,
       NULL::text AS title_alternate,
       geoweb_xml_text(r.abstract) AS abstract,
       geoweb_csw_keywords(r.id, r.keywords) AS keywords,
       NULL::text AS keywordstype,
       r.type AS format,
       r.source_page AS source,
       to_char(r.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS date,
       to_char(r.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS date_modified,
       CASE WHEN geoweb_is_file(r.type) THEN 'dataset' ELSE 'service' END AS type,
       ST_AsText(geoweb_multipolygon(r.bbox)) AS wkt_geometry,
       geoweb_multipolygon(r.bbox)::geometry(MultiPolygon, 4326) AS wkb_geometry,
       NULL::text AS crs,
       geoweb_xml_text(r.provider) AS organization,
       geoweb_xml_text(r.provider) AS publisher,
       NULL::text AS creator,
       NULL::text AS contributor,
       NULL::text AS relation,
       NULL::text AS securityconstraints,
       NULL::text AS parentidentifier,
       NULL::text AS topicategory,
       NULL::text AS resourcelanguage,
       NULL::text AS geodescode,
       NULL::text AS denominator,
       NULL::text AS distancevalue,
       NULL::text AS distanceuom,
       NULL::text AS time_begin,
       NULL::text AS time_end,
       CASE WHEN geoweb_is_file(r.type) THEN NULL ELSE geoweb_link_protocol(r.type) END AS servicetype,
       CASE WHEN geoweb_is_file(r.type) THEN NULL ELSE r.version END AS servicetypeversion,
       NULL::text AS operation,
       NULL::text AS couplingtype,
       NULL::text AS operateson,
       NULL::text AS operatesonidentifier,
       NULL::text AS operatesoname,
       CASE WHEN r.conformance IS NOT NULL THEN (r.conformance = 'conformant')::text END AS degree,
       NULL::text AS accessconstraints,
       NULL::text AS otherconstraints,
       NULL::text AS classification,
       NULL::text AS conditionapplyingtoaccessanduse,
       geoweb_conformance_statement(r.conformance, r.defects, r.owslib_error) AS lineage,
       NULL::text AS responsiblepartyrole,
       CASE WHEN r.conformance IS NOT NULL THEN concat_ws(' ', 'OGC', r.type, r.version) END
           AS specificationtitle,
       NULL::text AS specificationdate,
       NULL::text AS specificationdatetype,
       NULL::text AS date_revision,
       NULL::text AS date_creation,
       NULL::text AS date_publication,
       concat_ws(',', '', '', geoweb_link_protocol(r.type), geoweb_csw_url(r.url)) AS links
FROM resources r;

-- the identifier's expression gets its statistics now, not at the next autovacuum: until then the planner
-- guesses 0.5% of the table for a lookup and gathers parallel workers for it
ANALYZE resources;
