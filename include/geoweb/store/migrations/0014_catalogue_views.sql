-- The catalogue (docs/catalogue.md): one metadata record per discovered resource, in the columns pycsw 2.6
-- reads (its default repository mappings), for CSW 2.0.2 and, through pycsw, OGC API – Records. A plain view
-- over the live tables: a harvest's commit shows in the catalogue at once, nothing is copied.

-- The protocol a link to a resource of this type carries, as catalogue clients (QGIS MetaSearch, GeoNetwork)
-- name them: a service's endpoint, or a file's download.
CREATE FUNCTION geoweb_link_protocol(type text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN type IN ('WMS', 'WFS', 'WCS', 'WMTS', 'WPS', 'SOS', 'CSW') THEN 'OGC:' || type
        WHEN type LIKE 'OGCAPI-%' THEN 'OGC:API-' || initcap(substr(type, 8))
        WHEN type = 'STAC' THEN 'STAC'
        WHEN type = 'STAC-API' THEN 'STAC:API'
        WHEN type = 'ARCGIS-DIRECTORY' THEN 'ESRI:ArcGIS:Directory'
        WHEN type = 'ARCGIS-MAPSERVER' THEN 'ESRI:ArcGIS:MapServer'
        WHEN type = 'ARCGIS-FEATURESERVER' THEN 'ESRI:ArcGIS:FeatureServer'
        WHEN type = 'ARCGIS-IMAGESERVER' THEN 'ESRI:ArcGIS:ImageServer'
        WHEN type = 'KML' THEN 'WWW:DOWNLOAD-application/vnd.google-earth.kml+xml'
        WHEN type = 'SHAPEFILE' THEN 'WWW:DOWNLOAD-application/x-shapefile'
        WHEN type = 'GEOJSON' THEN 'WWW:DOWNLOAD-application/geo+json'
        WHEN type = 'GEOTIFF' THEN 'WWW:DOWNLOAD-image/tiff'
        ELSE 'WWW:LINK'
    END;

-- The file types of geoweb.models.FILE_TYPES (as qgis_files): a record of a dataset; the others are services.
CREATE FUNCTION geoweb_is_file(type text) RETURNS boolean
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN type IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');

-- Text from strangers' servers as XML 1.0 can hold it: JSON sources may carry control characters, which
-- would fail the serialization of a whole answer.
CREATE FUNCTION geoweb_xml_text(value text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN regexp_replace(value, '[\x01-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]', '', 'g');

-- pycsw splits a record's links on '^' and a link's fields on ',' (name,description,protocol,url), and its
-- keywords on ','; a URL keeps its meaning with those two percent-encoded, a keyword loses only the comma.
CREATE FUNCTION geoweb_csw_url(url text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN replace(replace(url, ',', '%2C'), '^', '%5E');

-- A resource's keywords, then the labels of the concepts its datasets are about.
CREATE FUNCTION geoweb_csw_keywords(resource bigint, keywords text[]) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN nullif(array_to_string(ARRAY(
        SELECT replace(geoweb_xml_text(k), ',', ' ') FROM unnest(keywords) k
        UNION ALL
        SELECT c.label FROM concepts c
        WHERE c.id IN (SELECT unnest(d.concepts) FROM datasets d WHERE d.resource_id = resource)
    ), ','), '');

-- The record. Its identifier names the resource's row; `type` is what Dublin Core and ISO call it (service or
-- dataset), `format` the harvest's type (WMS, KML...). The box is `wkb_geometry`, the name pycsw's PostGIS
-- filters use, with the expression indexed by 0011 (a bbox query uses the index); `anytext_tsvector` is
-- GeoHub's weighted search document (0012): pycsw's full-text search stems and reaches concepts like GeoHub.
-- The columns of pycsw's model the harvest has nothing for are null.
CREATE VIEW pycsw_records AS
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
       NULL::text AS degree,
       NULL::text AS accessconstraints,
       NULL::text AS otherconstraints,
       NULL::text AS classification,
       NULL::text AS conditionapplyingtoaccessanduse,
       NULL::text AS lineage,
       NULL::text AS responsiblepartyrole,
       NULL::text AS specificationtitle,
       NULL::text AS specificationdate,
       NULL::text AS specificationdatetype,
       NULL::text AS date_revision,
       NULL::text AS date_creation,
       NULL::text AS date_publication,
       concat_ws(',', '', '', geoweb_link_protocol(r.type), geoweb_csw_url(r.url)) AS links
FROM resources r;
