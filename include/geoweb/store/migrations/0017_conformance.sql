-- How well a service's capabilities document follows its standard (geoweb.models.Conformance): its level
-- (conformant, readable, identified; NULL where nothing judges it: OGC APIs, files...), the defects named
-- and OWSLib's reason where its reader failed.
ALTER TABLE resources
    ADD COLUMN conformance text CHECK (conformance IN ('conformant', 'readable', 'identified')),
    ADD COLUMN defects text[] NOT NULL DEFAULT '{}',
    ADD COLUMN owslib_error text;

-- The QGIS layers carry them, added at the end of each view's columns (CREATE OR REPLACE keeps the others).
CREATE OR REPLACE VIEW qgis_resources AS
SELECT r.id, r.url, r.type, r.version, r.title, r.abstract, r.provider,
       array_to_string(r.keywords, '; ') AS keywords, r.level, r.source_page, r.first_seen, r.last_seen,
       r.last_status, geoweb_multipolygon(r.bbox)::geometry(MultiPolygon, 4326) AS bbox,
       r.conformance, array_to_string(r.defects, '; ') AS defects, r.owslib_error
FROM resources r;

-- Views of `SELECT *` hold the columns their source had when they were made: made again, they get the new ones.
CREATE OR REPLACE VIEW qgis_files AS
SELECT * FROM qgis_resources WHERE type IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');
CREATE OR REPLACE VIEW qgis_services AS
SELECT * FROM qgis_resources WHERE type NOT IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');
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
