-- `geoweb export` writes each resource's quality (the figures `resources` keeps as of its last check, migration
-- 0023) with its other columns, and its resources are the rows of qgis_resources: the view ends with them, in
-- the order the layers of services and files (0025) have them. Those two are its rows again, with the same
-- columns and types as before, so the views of one kind of service over qgis_services stay as they are.
-- Idempotent.
CREATE OR REPLACE VIEW qgis_resources AS
SELECT r.id, r.url, r.type, r.version, r.title, r.abstract, r.provider,
       array_to_string(r.keywords, '; ') AS keywords, r.level, r.source_page, r.first_seen, r.last_seen,
       r.last_status, geoweb_multipolygon(r.bbox)::geometry(MultiPolygon, 4326) AS bbox,
       r.conformance, array_to_string(r.defects, '; ') AS defects, r.owslib_error,
       r.checks_30d, r.availability_30d_percent, r.response_median, r.inspire_availability, r.inspire_getmap
FROM resources r;

CREATE OR REPLACE VIEW qgis_files AS
SELECT * FROM qgis_resources WHERE type IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');
CREATE OR REPLACE VIEW qgis_services AS
SELECT * FROM qgis_resources WHERE type NOT IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');
