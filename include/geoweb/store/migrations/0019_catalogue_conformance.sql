-- The catalogue's records show a service's conformance level (migration 0017) in the columns pycsw's model
-- has for it; ISO 19139 records write them as the record's data quality (catalogue/quality.py): the standard
-- the capabilities claim (specificationtitle), whether the document follows it (degree, an xs:boolean as
-- gco:Boolean wants it) and what was found (lineage). NULL where nothing judges the resource.

-- What the harvest found reading a capabilities document with OWSLib, for a reader: its level, the defects
-- named and OWSLib's reason, as XML can hold them (the messages quote strangers' documents).
CREATE FUNCTION geoweb_conformance_statement(conformance text, defects text[], owslib_error text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN geoweb_xml_text(CASE conformance
        WHEN 'conformant' THEN 'Capabilities document read whole by OWSLib'
        WHEN 'readable' THEN 'Capabilities document readable'
        WHEN 'identified' THEN 'Capabilities document identified by its type and version only'
    END || coalesce(': ' || nullif(array_to_string(array_append(defects, owslib_error), '; '), ''),
                    ''));

-- The view of 0014 with those three columns filled in: the same columns in the same order, as CREATE OR REPLACE
-- requires (no other view reads it).
CREATE OR REPLACE VIEW pycsw_records AS
SELECT 'urn:geoweb:resource:' || r.id AS identifier,
       'csw:Record' AS typename,
       'urn:geoweb:harvest' AS schema,  -- not csw's own: pycsw writes every record from these columns
       'harvest' AS mdsource,
       to_char(r.first_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS insert_date,
       xmlserialize(DOCUMENT xmlelement(
           NAME "csw:Record",
           xmlattributes('http://www.opengis.net/cat/csw/2.0.2' AS "xmlns:csw",
                         'http://purl.org/dc/elements/1.1/' AS "xmlns:dc",
                         'http://purl.org/dc/terms/' AS "xmlns:dct"),
           xmlelement(NAME "dc:identifier", 'urn:geoweb:resource:' || r.id),
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
