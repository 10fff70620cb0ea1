-- Views for QGIS and other GIS clients: one layer per kind, each with a geometry column of one type
-- (MultiPolygon, SRID 4326) and a stable integer key (`id`, the row's id in `resources` or `datasets`).
-- Plain views over the live tables: nothing is copied, a crawl's commit shows at once. `geoweb export`
-- writes the rows of `qgis_resources` and `qgis_datasets`.

-- A stored box (a polygon, a point or line when degenerate, two parts across the antimeridian) as a
-- MultiPolygon. An areal box is kept as it is; a point or line part becomes the envelope 0.00001 degrees
-- (about a metre) wider on every side, clipped to the world, so that every box has one geometry type and
-- stays visible, and a crossing box's two parts stay two.
CREATE FUNCTION geoweb_multipolygon(box geometry) RETURNS geometry
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE
        WHEN ST_Dimension(box) = 2 THEN ST_Multi(box)
        ELSE (
            SELECT ST_Multi(ST_Collect(ST_MakeEnvelope(
                greatest(ST_XMin(part.geom) - 0.00001, -180), greatest(ST_YMin(part.geom) - 0.00001, -90),
                least(ST_XMax(part.geom) + 0.00001, 180), least(ST_YMax(part.geom) + 0.00001, 90),
                ST_SRID(box)
            )))
            FROM ST_Dump(box) AS part
        )
    END;

-- QGIS filters a layer by the map's extent (`&&`); these expressions are the views' geometry columns.
CREATE INDEX resources_bbox_multipolygon
    ON resources USING gist ((geoweb_multipolygon(bbox)::geometry(MultiPolygon, 4326)));
CREATE INDEX datasets_footprint_multipolygon
    ON datasets USING gist ((geoweb_multipolygon(footprint)::geometry(MultiPolygon, 4326)));

-- Every service and file; keywords joined with '; '; level and source page of its first sighting.
CREATE VIEW qgis_resources AS
SELECT r.id, r.url, r.type, r.version, r.title, r.abstract, r.provider,
       array_to_string(r.keywords, '; ') AS keywords, r.level, r.source_page, r.first_seen, r.last_seen,
       r.last_status, geoweb_multipolygon(r.bbox)::geometry(MultiPolygon, 4326) AS bbox
FROM resources r;

-- The file types of geoweb.models.FILE_TYPES; every other resource is a service.
CREATE VIEW qgis_files AS
SELECT * FROM qgis_resources WHERE type IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');

CREATE VIEW qgis_services AS
SELECT * FROM qgis_resources WHERE type NOT IN ('KML', 'SHAPEFILE', 'GEOJSON', 'GEOTIFF');

-- Every layer, feature type, coverage, process, offering or file part, with its resource.
CREATE VIEW qgis_datasets AS
SELECT d.id, d.resource_id, r.url AS resource_url, r.type AS resource_type, r.title AS resource_title,
       r.provider, d.position, d.name, d.title, array_to_string(d.keywords, '; ') AS keywords,
       array_to_string(d.concepts, '; ') AS concepts,
       geoweb_multipolygon(d.footprint)::geometry(MultiPolygon, 4326) AS footprint
FROM datasets d JOIN resources r ON r.id = d.resource_id;

CREATE VIEW qgis_wms_layers AS
SELECT id, resource_id, resource_url AS service_url, resource_title AS service_title, provider, position, name,
       title, keywords, concepts, footprint
FROM qgis_datasets WHERE resource_type = 'WMS';

CREATE VIEW qgis_wfs_feature_types AS
SELECT id, resource_id, resource_url AS service_url, resource_title AS service_title, provider, position, name,
       title, keywords, concepts, footprint
FROM qgis_datasets WHERE resource_type = 'WFS';

CREATE VIEW qgis_coverages AS
SELECT id, resource_id, resource_url AS service_url, resource_title AS service_title, provider, position, name,
       title, keywords, concepts, footprint
FROM qgis_datasets WHERE resource_type = 'WCS';
