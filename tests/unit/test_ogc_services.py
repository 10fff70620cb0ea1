"""Classification of every capabilities root the standards define, and the metadata of versions the real
corpus lacks, from small documents written to the schemas."""

import pytest

from geoweb.detect.ogc import SERVICES, read_capabilities
from geoweb.models import OGC_TYPES

URL = "http://h/ows"
OWS = 'xmlns:ows="http://www.opengis.net/ows/1.1"'


def read(xml: str):
    return read_capabilities(xml.encode(), URL)


def test_one_service_per_type_and_no_shared_root():
    assert [s.name for s in SERVICES] == list(OGC_TYPES)
    roots = [root for s in SERVICES for root in s.roots]
    assert len(roots) == len(set(roots))


@pytest.mark.parametrize(
    ("root", "kind", "version"),
    [
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
        ('wps:Capabilities xmlns:wps="http://www.opengis.net/wps/2.0" version="2.0.0"', "WPS", "2.0.0"),
        ('sos:Capabilities xmlns:sos="http://www.opengis.net/sos/1.0"', "SOS", "1.0.0"),
        ('sos:Capabilities xmlns:sos="http://www.opengis.net/sos/2.0" version="2.0.0"', "SOS", "2.0.0"),
        ('csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/2.0.2"', "CSW", "2.0.2"),
        ('csw:Capabilities xmlns:csw="http://www.opengis.net/cat/csw/3.0" version="3.0.0"', "CSW", "3.0.0"),
    ],
)
def test_every_root_and_version(root, kind, version):
    # Empty documents: every extractor copes with missing sections.
    resource = read(f"<{root}/>")
    assert (resource.type, resource.version) == (kind, version)
    assert resource.url == URL
    assert resource.datasets == []
    assert resource.bbox is None


def test_wms_named_layers_nested_inherited_and_unique():
    resource = read(
        """<WMS_Capabilities xmlns="http://www.opengis.net/wms" version="1.3.0">
        <Service><Title> Roads </Title><Abstract>All roads</Abstract>
          <KeywordList><Keyword>transport</Keyword></KeywordList>
          <ContactInformation><ContactPersonPrimary><ContactOrganization>Agency</ContactOrganization>
          </ContactPersonPrimary></ContactInformation></Service>
        <Capability><Layer><Title>root, no name</Title>
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
          <Layer><Name>c</Name><EX_GeographicBoundingBox><westBoundLongitude>bad</westBoundLongitude>
          </EX_GeographicBoundingBox></Layer>
        </Layer></Capability></WMS_Capabilities>"""
    )
    assert (resource.title, resource.abstract, resource.keywords, resource.provider) == (
        "Roads",
        "All roads",
        ["transport"],
        "Agency",
    )
    assert [d.name for d in resource.datasets] == ["a", "a.1", "b", "c"]
    a, a1, b, c = resource.datasets
    assert (a.title, a.keywords, a.bbox) == ("A", ["k"], (-1.0, 41.0, 1.0, 42.0))
    assert a1.bbox == a.bbox
    assert b.bbox == (-10.0, 40.0, 10.0, 50.0)  # from the root layer, through the unnamed one
    assert c.bbox == b.bbox  # a broken box falls back to the parent's, which encloses the layer
    assert resource.bbox == (-10.0, 40.0, 10.0, 50.0)


def test_wms_1_0_keywords_text_and_lat_lon_box():
    resource = read(
        """<WMT_MS_Capabilities version="1.0.0"><Service><Title>Old</Title><Keywords>a b</Keywords></Service>
        <Capability><Layer><Name>x</Name><LatLonBoundingBox minx="-5" miny="1" maxx="5" maxy="2"/></Layer>
        </Capability></WMT_MS_Capabilities>"""
    )
    assert resource.keywords == ["a", "b"]
    assert resource.datasets[0].bbox == (-5.0, 1.0, 5.0, 2.0)


def test_wfs_2_0_feature_types():
    resource = read(
        f"""<WFS_Capabilities xmlns="http://www.opengis.net/wfs/2.0" {OWS} version="2.0.0">
        <ows:ServiceIdentification><ows:Title>Parcels</ows:Title></ows:ServiceIdentification>
        <ows:ServiceProvider><ows:ProviderName>Cadastre</ows:ProviderName></ows:ServiceProvider>
        <FeatureTypeList><FeatureType><Name>cp:Parcel</Name><Title>Parcels</Title>
          <ows:Keywords><ows:Keyword>land</ows:Keyword></ows:Keywords>
          <ows:WGS84BoundingBox><ows:LowerCorner>12 48</ows:LowerCorner><ows:UpperCorner>19 51</ows:UpperCorner>
          </ows:WGS84BoundingBox></FeatureType>
          <FeatureType><Title>no name</Title></FeatureType></FeatureTypeList></WFS_Capabilities>"""
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
        """<WCS_Capabilities xmlns="http://www.opengis.net/wcs" xmlns:gml="http://www.opengis.net/gml"
          version="1.0.0"><Service><name>WCS</name><label>Elevation</label><description>DEM</description>
          <keywords><keyword>height</keyword></keywords>
          <responsibleParty><organisationName>Survey</organisationName></responsibleParty></Service>
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


def test_wcs_1_1_nested_summaries_and_lat_lon_bounding_box():
    resource = read(
        f"""<Capabilities xmlns="http://www.opengis.net/wcs/1.1.1" {OWS} version="1.1.1"><Contents>
        <CoverageSummary><ows:Title>group, no identifier</ows:Title>
          <CoverageSummary><Identifier>sst</Identifier><ows:Title>SST</ows:Title>
            <ows:BoundingBox crs="urn:ogc:def:crs:EPSG::4326">
              <ows:LowerCorner>-60 -170</ows:LowerCorner><ows:UpperCorner>60 170</ows:UpperCorner>
            </ows:BoundingBox></CoverageSummary>
        </CoverageSummary></Contents></Capabilities>"""
    )
    [sst] = resource.datasets
    assert (sst.name, sst.title, sst.bbox) == ("sst", "SST", (-170.0, -60.0, 170.0, 60.0))


def test_wcs_2_0_coverage_ids():
    resource = read(
        f"""<wcs:Capabilities xmlns:wcs="http://www.opengis.net/wcs/2.0" {OWS} version="2.0.1"><wcs:Contents>
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
        <TileMatrixSet><ows:Identifier>EPSG:3857</ows:Identifier></TileMatrixSet>
        </Contents></Capabilities>"""
    )
    [ortho] = resource.datasets
    assert (ortho.name, ortho.title) == ("ortho", "Orthophoto")
    assert ortho.extra == {"tile_matrix_sets": ["EPSG:3857", "WGS84"]}


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
          xmlns:gml="http://www.opengis.net/gml/3.2" version="2.0.0"><sos:contents><sos:Contents>
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
