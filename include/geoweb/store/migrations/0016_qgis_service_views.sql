-- A layer per kind of service for QGIS: the rows of qgis_services of one OGC type, or of one family (OGC API,
-- STAC, ArcGIS REST), so that a user adds "the WMS" without a Query Builder filter.
CREATE VIEW qgis_wms_services AS SELECT * FROM qgis_services WHERE type = 'WMS';
CREATE VIEW qgis_wfs_services AS SELECT * FROM qgis_services WHERE type = 'WFS';
CREATE VIEW qgis_wcs_services AS SELECT * FROM qgis_services WHERE type = 'WCS';
CREATE VIEW qgis_wmts_services AS SELECT * FROM qgis_services WHERE type = 'WMTS';
CREATE VIEW qgis_wps_services AS SELECT * FROM qgis_services WHERE type = 'WPS';
CREATE VIEW qgis_sos_services AS SELECT * FROM qgis_services WHERE type = 'SOS';
CREATE VIEW qgis_csw_services AS SELECT * FROM qgis_services WHERE type = 'CSW';
CREATE VIEW qgis_ogcapi_services AS SELECT * FROM qgis_services WHERE type LIKE 'OGCAPI-%';
CREATE VIEW qgis_stac_services AS SELECT * FROM qgis_services WHERE type LIKE 'STAC%';
CREATE VIEW qgis_arcgis_services AS SELECT * FROM qgis_services WHERE type LIKE 'ARCGIS-%';
