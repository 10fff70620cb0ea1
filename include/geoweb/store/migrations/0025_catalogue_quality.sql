-- A resource's quality as its revisits measure it (the figures each resource keeps, migration 0023) reaches the
-- catalogue's records and the QGIS layers of services and files.

-- The figures of a catalogue record, as of the resource's last check: checks and availability over 30 days,
-- the median response time in seconds, and each INSPIRE criterion with its rule and verdict. NULL before the
-- first check. The rules are resource_quality's; its figures over the checks are not read.
CREATE FUNCTION geoweb_catalogue_quality(resource_id bigint) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    RETURN (
        SELECT jsonb_build_object(
            'checks_30d', r.checks_30d, 'availability_30d_percent', r.availability_30d_percent,
            'response_median', r.response_median,
            'inspire', (
                SELECT jsonb_agg(jsonb_build_object('rule', c.rule, 'verdict', c.verdict))
                FROM resource_quality q,
                     LATERAL (VALUES (q.inspire_availability_rule, r.inspire_availability),
                                     (q.inspire_getmap_rule, r.inspire_getmap)) AS c (rule, verdict)
                WHERE q.resource_id = r.id AND c.verdict IS NOT NULL
            ))
        FROM resources r
        WHERE r.id = resource_id AND r.checks_30d IS NOT NULL
    );

-- pycsw's columns (migrations 0014, 0019) keep their view under a name of their own, and pycsw_records is
-- them with the record's quality: what it measures more is a change of the function, not of the views.
ALTER VIEW pycsw_records RENAME TO pycsw_record_columns;
CREATE VIEW pycsw_records AS
SELECT c.*, geoweb_catalogue_quality(substr(c.identifier, length('urn:geoweb:resource:') + 1)::bigint) AS quality
FROM pycsw_record_columns c;

-- The QGIS layers of services and files carry the figures, to style a layer by availability. qgis_resources
-- keeps the columns `geoweb export` writes (docs/postgis.md).
CREATE OR REPLACE VIEW qgis_files AS
SELECT q.*, r.checks_30d, r.availability_30d_percent, r.response_median, r.inspire_availability,
       r.inspire_getmap
FROM qgis_resources q JOIN resources r ON r.id = q.id
WHERE q.type IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');
CREATE OR REPLACE VIEW qgis_services AS
SELECT q.*, r.checks_30d, r.availability_30d_percent, r.response_median, r.inspire_availability,
       r.inspire_getmap
FROM qgis_resources q JOIN resources r ON r.id = q.id
WHERE q.type NOT IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');

-- Views of `SELECT *` hold the columns their source had when they were made: made again, they get the new ones.
CREATE OR REPLACE VIEW qgis_wms_services AS SELECT * FROM qgis_services WHERE type = 'WMS';
CREATE OR REPLACE VIEW qgis_wfs_services AS SELECT * FROM qgis_services WHERE type = 'WFS';
CREATE OR REPLACE VIEW qgis_wcs_services AS SELECT * FROM qgis_services WHERE type = 'WCS';
CREATE OR REPLACE VIEW qgis_wmts_services AS SELECT * FROM qgis_services WHERE type = 'WMTS';
CREATE OR REPLACE VIEW qgis_wps_services AS SELECT * FROM qgis_services WHERE type = 'WPS';
CREATE OR REPLACE VIEW qgis_sos_services AS SELECT * FROM qgis_services WHERE type = 'SOS';
CREATE OR REPLACE VIEW qgis_csw_services AS SELECT * FROM qgis_services WHERE type = 'CSW';
CREATE OR REPLACE VIEW qgis_ogcapi_services AS SELECT * FROM qgis_services WHERE type LIKE 'OGCAPI-%';
CREATE OR REPLACE VIEW qgis_stac_services AS SELECT * FROM qgis_services WHERE type LIKE 'STAC%';
CREATE OR REPLACE VIEW qgis_arcgis_services AS SELECT * FROM qgis_services WHERE type LIKE 'ARCGIS-%';
