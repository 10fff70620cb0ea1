"""Classification of every capabilities root the standards define, and OWSLib's reading (with the adapter's
corrections) of the versions the real corpus lacks, from small documents written to the schemas."""

import pytest

from geoweb.detect.ogc import SERVICES, classify, read_capabilities
from geoweb.models import OGC_TYPES, Conformance
from geoweb.xmlsafe import parse_xml

URL = "http://h/ows"
OWS = 'xmlns:ows="http://www.opengis.net/ows/1.1"'
XLINK = 'xmlns:xlink="http://www.w3.org/1999/xlink"'
# the sections OWSLib's readers need and the schemas require
WMS_REQUEST = (
    "<Request><GetCapabilities><Format>text/xml</Format><DCPType><HTTP><Get>"
    '<OnlineResource xlink:type="simple" xlink:href="http://h/ows"/></Get></HTTP></DCPType>'
    "</GetCapabilities></Request><Exception><Format>XML</Format></Exception>"
)
OWS_OPERATIONS = (
    '<ows:OperationsMetadata><ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP>'
    '<ows:Get xlink:href="http://h/ows"/></ows:HTTP></ows:DCP></ows:Operation></ows:OperationsMetadata>'
)


def read(xml: str):
    return read_capabilities(xml.encode(), URL)


def test_one_service_per_type_and_no_shared_root():
    assert [s.name for s in SERVICES] == list(OGC_TYPES)
    roots = [root for s in SERVICES for root in s.roots]
    assert len(roots) == len(set(roots))


ROOTS = [
    ('WMT_MS_Capabilities version="1.0.0"', "WMS", "1.0.0"),
    ('WMT_MS_Capabilities version="1.1.0"', "WMS", "1.1.0"),
    ('WMT_MS_Capabilities version=" 1.1.1 "', "WMS", "1.1.1"),
    ("WMT_MS_Capabilities", "WMS", None),
    ('WMS_Capabilities xmlns="http://www.opengis.net/wms" version="1.3.0"', "WMS", "1.3.0"),
    ('WMS_Capabilities xmlns="http://www.opengis.net/wms"', "WMS", "1.3.0"),
    ('WFS_Capabilities xmlns="http://www.opengis.net/wfs" version="1.0.0"', "WFS", "1.0.0"),
    ('wfs:WFS_Capabilities xmlns:wfs="http://www.opengis.net/wfs" version="1.1.0"', "WFS", "1.1.0"),
    ('WFS_Capabilities xmlns="http://www.opengis.net/wfs"', "WFS", None),
    ('WFS_Capabilities xmlns="http://www.opengis.net/wfs/2.0" version="2.0.2"', "WFS", "2.0.2"),
    ('WFS_Capabilities xmlns="http://www.opengis.net/wfs/2.0"', "WFS", "2.0.0"),
    ('WCS_Capabilities xmlns="http://www.opengis.net/wcs" version="1.0.0"', "WCS", "1.0.0"),
    ('Capabilities xmlns="http://www.opengis.net/wcs/1.1"', "WCS", "1.1.0"),
    ('wcs:Capabilities xmlns:wcs="http://www.opengis.net/wcs/1.1.1" version="1.1.2"', "WCS", "1.1.2"),
    ('Capabilities xmlns="http://www.opengis.net/wcs/1.1.1"', "WCS", "1.1.1"),
    ('Capabilities xmlns="http://www.opengis.net/wcs/2.0" version="2.0.1"', "WCS", "2.0.1"),
    ('Capabilities xmlns="http://www.opengis.net/wcs/2.0"', "WCS", "2.0"),
    ('Capabilities xmlns="http://www.opengis.net/wmts/1.0"', "WMTS", "1.0.0"),
    ('wps:Capabilities xmlns:wps="http://www.opengis.net/wps/1.0.0" service="WPS"', "WPS", "1.0.0"),
    ('Capabilities xmlns="http://www.opengeospatial.net/wps" version="1.0.0"', "WPS", "1.0.0"),
    ('Capabilities xmlns="http://www.opengeospatial.net/wps" version="0.4.0"', "WPS", "0.4.0"),
    ('wps:Capabilities xmlns:wps="http://www.opengis.net/wps/2.0" version="2.0.0"', "WPS", "2.0.0"),
    ('sos:Capabilities xmlns:sos="http://www.opengis.net/sos/1.0"', "SOS", "1.0.0"),
    ('sos:Capabilities xmlns:sos="http://www.opengis.net/sos/2.0" version="2.0.0"', "SOS", "2.0.0"),
    ('csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/2.0.2"', "CSW", "2.0.2"),
    ('csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/3.0" version="3.0.0"', "CSW", "3.0.0"),
]


@pytest.mark.parametrize(("root", "kind", "version"), ROOTS)
def test_every_root_and_version(root, kind, version):
    service, found, defects = classify(parse_xml(f"<{root}/>".encode()))
    assert (service.name, found, defects) == (kind, version, [])


# Empty documents OWSLib still reads: its WPS, WFS 1.1 and OWS Common (CSW) readers are null-safe. An empty
# document is a service all the same, identified by its root, with its sections named as missing.
READABLE_EMPTY = {("WPS", v) for v in ("1.0.0", "0.4.0", "2.0.0")} | {
    ("WFS", "1.1.0"),
    ("WFS", None),  # read as 1.1.0: no 1.0 Service section
    ("CSW", "2.0.2"),
    ("CSW", "3.0.0"),
}


@pytest.mark.parametrize(("root", "kind", "version"), ROOTS)
def test_an_empty_document_is_identified_and_owslib_read_it_only_where_it_can(root, kind, version):
    resource = read(f"<{root}/>")
    assert (resource.type, resource.version, resource.datasets, resource.bbox) == (kind, version, [], None)
    assert resource.conformance == Conformance.IDENTIFIED
    assert resource.defects and all(d.startswith("no ") and d.endswith(" section") for d in resource.defects)
    if (kind, version) in READABLE_EMPTY:
        assert resource.owslib_error is None
    else:
        assert resource.owslib_error.startswith(f"OWSLib's {kind} reader cannot read it: ")


def test_wms_named_layers_nested_inherited_and_unique():
    resource = read(
        f"""<WMS_Capabilities xmlns="http://www.opengis.net/wms" {XLINK} version="1.3.0">
        <Service><Name>WMS</Name><Title> Roads </Title><Abstract>All roads</Abstract>
          <KeywordList><Keyword>transport</Keyword></KeywordList>
          <ContactInformation><ContactPersonPrimary><ContactOrganization>Agency</ContactOrganization>
          </ContactPersonPrimary></ContactInformation></Service>
        <Capability>{WMS_REQUEST}<Layer><Title>root, no name</Title>
          <EX_GeographicBoundingBox><westBoundLongitude>-10</westBoundLongitude>
            <eastBoundLongitude>10</eastBoundLongitude><southBoundLatitude>40</southBoundLatitude>
            <northBoundLatitude>50</northBoundLatitude></EX_GeographicBoundingBox>
          <Layer><Name>a</Name><Title>A</Title><KeywordList><Keyword>k</Keyword></KeywordList>
            <EX_GeographicBoundingBox><westBoundLongitude>-1</westBoundLongitude>
              <eastBoundLongitude>1</eastBoundLongitude><southBoundLatitude>41</southBoundLatitude>
              <northBoundLatitude>42</northBoundLatitude></EX_GeographicBoundingBox>
            <Layer><Name>a.1</Name><Title>inherits from a</Title></Layer>
          </Layer>
          <Layer><Name> </Name><Title>blank name</Title><Layer><Name>b</Name></Layer></Layer>
          <Layer><Name>a</Name><Title>repeated name</Title></Layer>
        </Layer></Capability></WMS_Capabilities>"""
    )
    assert (resource.title, resource.abstract, resource.keywords, resource.provider) == (
        "Roads",
        "All roads",
        ["transport"],
        "Agency",
    )
    assert [d.name for d in resource.datasets] == ["a", "a.1", "b"]
    a, a1, b = resource.datasets
    # a repeated name: OWSLib keeps the first place and the last layer ("Using child layer")
    assert (a.title, a.keywords, a.bbox) == ("repeated name", [], (-10.0, 40.0, 10.0, 50.0))
    assert (a1.title, a1.bbox) == ("inherits from a", (-1.0, 41.0, 1.0, 42.0))
    assert b.bbox == (-10.0, 40.0, 10.0, 50.0)  # from the root layer, through the unnamed one
    assert resource.bbox == (-10.0, 40.0, 10.0, 50.0)


def test_wms_1_1_keywords_and_lat_lon_box():
    resource = read(
        f"""<WMT_MS_Capabilities {XLINK} version="1.1.1"><Service><Name>OGC:WMS</Name><Title>Old</Title>
        <KeywordList><Keyword>a</Keyword><Keyword>b</Keyword></KeywordList></Service>
        <Capability>{WMS_REQUEST}<Layer><Name>x</Name><Title>X</Title><LatLonBoundingBox minx="-5" miny="1" maxx="5" maxy="2"/></Layer>
        </Capability></WMT_MS_Capabilities>"""
    )
    assert resource.keywords == ["a", "b"]
    assert resource.datasets[0].bbox == (-5.0, 1.0, 5.0, 2.0)


def test_wfs_2_0_feature_types():
    resource = read(
        f"""<WFS_Capabilities xmlns="http://www.opengis.net/wfs/2.0" {OWS} {XLINK} version="2.0.0">
        <ows:ServiceIdentification><ows:Title>Parcels</ows:Title></ows:ServiceIdentification>
        <ows:ServiceProvider><ows:ProviderName>Cadastre</ows:ProviderName></ows:ServiceProvider>{OWS_OPERATIONS}
        <FeatureTypeList><FeatureType><Name>cp:Parcel</Name><Title>Parcels</Title>
          <ows:Keywords><ows:Keyword>land</ows:Keyword></ows:Keywords>
          <ows:WGS84BoundingBox><ows:LowerCorner>12 48</ows:LowerCorner><ows:UpperCorner>19 51</ows:UpperCorner>
          </ows:WGS84BoundingBox></FeatureType>
          </FeatureTypeList></WFS_Capabilities>"""
    )
    assert (resource.title, resource.provider) == ("Parcels", "Cadastre")
    [parcel] = resource.datasets
    assert (parcel.name, parcel.title, parcel.keywords, parcel.bbox) == (
        "cp:Parcel",
        "Parcels",
        ["land"],
        (12.0, 48.0, 19.0, 51.0),
    )


def test_wcs_1_0_coverage_offerings():
    resource = read(
        f"""<WCS_Capabilities xmlns="http://www.opengis.net/wcs" xmlns:gml="http://www.opengis.net/gml" {XLINK}
          version="1.0.0"><Service><name>WCS</name><label>Elevation</label><description>DEM</description>
          <keywords><keyword>height</keyword></keywords>
          <responsibleParty><organisationName>Survey</organisationName></responsibleParty>
          <fees>NONE</fees><accessConstraints>NONE</accessConstraints></Service>
        <Capability><Request><GetCapabilities><DCPType><HTTP><Get><OnlineResource xlink:href="http://h/ows"/>
          </Get></HTTP></DCPType></GetCapabilities></Request></Capability>
        <ContentMetadata><CoverageOfferingBrief><name>dem</name><label>DEM 30 m</label>
          <lonLatEnvelope srsName="urn:ogc:def:crs:OGC:1.3:CRS84">
            <gml:pos>5.9 45.8</gml:pos><gml:pos>10.5 47.8</gml:pos></lonLatEnvelope>
        </CoverageOfferingBrief></ContentMetadata></WCS_Capabilities>"""
    )
    assert (resource.title, resource.abstract, resource.keywords, resource.provider) == (
        "Elevation",
        "DEM",
        ["height"],
        "Survey",
    )
    [dem] = resource.datasets
    assert (dem.name, dem.title, dem.bbox) == ("dem", "DEM 30 m", (5.9, 45.8, 10.5, 47.8))


def test_wcs_1_1_nested_summaries():
    resource = read(
        f"""<Capabilities xmlns="http://www.opengis.net/wcs/1.1.1" {OWS} version="1.1.1">
        <ows:ServiceIdentification><ows:Title>Ocean</ows:Title><ows:Fees>NONE</ows:Fees>
        <ows:AccessConstraints>NONE</ows:AccessConstraints></ows:ServiceIdentification>
        <ows:ServiceProvider><ows:ProviderName>Ocean Institute</ows:ProviderName></ows:ServiceProvider><Contents>
        <CoverageSummary><ows:Title>group, no identifier</ows:Title>
          <CoverageSummary><Identifier>sst</Identifier><ows:Title>SST</ows:Title>
            <ows:WGS84BoundingBox>
              <ows:LowerCorner>-170 -60</ows:LowerCorner><ows:UpperCorner>170 60</ows:UpperCorner>
            </ows:WGS84BoundingBox></CoverageSummary>
        </CoverageSummary></Contents></Capabilities>"""
    )
    [sst] = resource.datasets
    assert (sst.name, sst.title, sst.bbox) == ("sst", "SST", (-170.0, -60.0, 170.0, 60.0))


def test_wcs_2_0_coverage_ids():
    resource = read(
        """<wcs:Capabilities xmlns:wcs="http://www.opengis.net/wcs/2.0" xmlns:ows="http://www.opengis.net/ows/2.0"
          version="2.0.1">
        <ows:ServiceIdentification><ows:Title>Climate</ows:Title></ows:ServiceIdentification>
        <ows:ServiceProvider><ows:ProviderName>Met Office</ows:ProviderName></ows:ServiceProvider>
        <ows:OperationsMetadata><ows:Operation name="GetCapabilities"><ows:DCP><ows:HTTP>
          <ows:Get xmlns:xlink="http://www.w3.org/1999/xlink" xlink:href="http://h/ows"/></ows:HTTP></ows:DCP>
        </ows:Operation></ows:OperationsMetadata><wcs:Contents>
        <wcs:CoverageSummary><wcs:CoverageId>temp_2m</wcs:CoverageId>
          <ows:WGS84BoundingBox><ows:LowerCorner>-180 -90</ows:LowerCorner>
          <ows:UpperCorner>180 90</ows:UpperCorner></ows:WGS84BoundingBox></wcs:CoverageSummary>
        <wcs:CoverageSummary><wcs:CoverageId>precip</wcs:CoverageId></wcs:CoverageSummary>
        </wcs:Contents></wcs:Capabilities>"""
    )
    assert [(d.name, d.bbox) for d in resource.datasets] == [
        ("temp_2m", (-180.0, -90.0, 180.0, 90.0)),
        ("precip", None),
    ]


def test_wmts_layers_carry_their_tile_matrix_sets():
    resource = read(
        f"""<Capabilities xmlns="http://www.opengis.net/wmts/1.0" {OWS} version="1.0.0"><Contents>
        <Layer><ows:Identifier>ortho</ows:Identifier><ows:Title>Orthophoto</ows:Title>
          <TileMatrixSetLink><TileMatrixSet>EPSG:3857</TileMatrixSet></TileMatrixSetLink>
          <TileMatrixSetLink><TileMatrixSet> WGS84 </TileMatrixSet></TileMatrixSetLink>
          <Style><ows:Identifier>default</ows:Identifier></Style></Layer>
        <TileMatrixSet><ows:Identifier>EPSG:3857</ows:Identifier>
          <ows:SupportedCRS>urn:ogc:def:crs:EPSG::3857</ows:SupportedCRS></TileMatrixSet>
        </Contents></Capabilities>"""
    )
    [ortho] = resource.datasets
    assert (ortho.name, ortho.title) == ("ortho", "Orthophoto")
    assert ortho.extra == {"tile_matrix_sets": ["EPSG:3857", "WGS84"], "styles": ["default"]}


def test_wps_2_0_process_summaries():
    resource = read(
        """<wps:Capabilities xmlns:wps="http://www.opengis.net/wps/2.0" xmlns:ows="http://www.opengis.net/ows/2.0"
          version="2.0.0"><ows:ServiceIdentification><ows:Title>Processing</ows:Title>
          </ows:ServiceIdentification><wps:Contents>
          <wps:ProcessSummary><ows:Title>Buffer</ows:Title><ows:Identifier>buffer</ows:Identifier>
          </wps:ProcessSummary></wps:Contents></wps:Capabilities>"""
    )
    assert resource.title == "Processing"
    assert [(d.name, d.title) for d in resource.datasets] == [("buffer", "Buffer")]


def test_sos_2_0_offerings_with_lat_lon_observed_area():
    resource = read(
        """<sos:Capabilities xmlns:sos="http://www.opengis.net/sos/2.0" xmlns:swes="http://www.opengis.net/swes/2.0"
          xmlns:gml="http://www.opengis.net/gml/3.2" xmlns:ows="http://www.opengis.net/ows/1.1" version="2.0.0">
          <ows:ServiceIdentification><ows:Title>Stations</ows:Title></ows:ServiceIdentification>
          <ows:ServiceProvider><ows:ProviderName>Network</ows:ProviderName></ows:ServiceProvider>
          <sos:contents><sos:Contents>
          <swes:offering><sos:ObservationOffering>
            <swes:identifier>http://h/offering/1</swes:identifier><swes:name>Station 1</swes:name>
            <sos:observedArea><gml:Envelope srsName="http://www.opengis.net/def/crs/EPSG/0/4326">
              <gml:lowerCorner>52.1 7.5</gml:lowerCorner><gml:upperCorner>52.3 7.7</gml:upperCorner>
            </gml:Envelope></sos:observedArea></sos:ObservationOffering></swes:offering>
          </sos:Contents></sos:contents></sos:Capabilities>"""
    )
    [offering] = resource.datasets
    assert (offering.name, offering.title, offering.bbox) == (
        "http://h/offering/1",
        "Station 1",
        (7.5, 52.1, 7.7, 52.3),
    )


def test_csw_3_0_identification():
    resource = read(
        """<csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/3.0" xmlns:ows="http://www.opengis.net/ows/2.0"
          version="3.0.0"><ows:ServiceIdentification><ows:Title>Catalogue</ows:Title>
          <ows:Abstract>Records</ows:Abstract></ows:ServiceIdentification>
          <ows:ServiceProvider><ows:ProviderName>SDI</ows:ProviderName></ows:ServiceProvider></csw:Capabilities>"""
    )
    assert (resource.type, resource.title, resource.abstract, resource.provider) == (
        "CSW",
        "Catalogue",
        "Records",
        "SDI",
    )
    assert resource.datasets == []
