"""GeoTIFF/COG detection from the TIFF header, placed by GDAL: files written by the GDAL command-line programs and
GDAL's bindings (rasterio) at test time."""

import asyncio
import json
import struct
import subprocess
import warnings

import pytest
from pyproj import Transformer
from rasterio.errors import NotGeoreferencedWarning

from geoweb.detect.geotiff import HEADER_BYTES, GeoTIFFDetector
from tests.data.files.make_fixtures import (
    LoopbackFetch,
    context,
    file_handler,
    geotiff_cases,
    response,
    serve,
)

TYPES = ("GEOTIFF",)
UTM = (500000.0, 5000000.0, 520000.0, 5020000.0)
UTM_WGS84 = Transformer.from_crs("EPSG:32633", "EPSG:4326", always_xy=True).transform_bounds(
    *UTM, densify_pts=21
)
# a rotated grid: GDAL can only write it as a ModelTransformation tag
ROTATED_VRT = """<VRTDataset rasterXSize="100" rasterYSize="50">
  <SRS>EPSG:4326</SRS>
  <GeoTransform>10.0, 0.01, 0.002, 50.0, 0.001, -0.01</GeoTransform>
  <VRTRasterBand dataType="Byte" band="1"/>
</VRTDataset>"""


def gdal(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=60)


def make_geotiff(folder, name: str, *, srs: str | None = "EPSG:32633", size: int = 1024, options=()):
    """A GeoTIFF of ``size`` pixels a side over UTM, or 10-11E 47-48N in EPSG:4326; None: no georeferencing."""
    path = folder / name
    west, south, east, north = UTM if srs != "EPSG:4326" else (10, 47, 11, 48)
    georef = ["-a_srs", srs, "-a_ullr", f"{west}", f"{north}", f"{east}", f"{south}"] if srs else []
    gdal(
        "gdal_create",
        "-q",
        "-of",
        "GTiff",
        "-outsize",
        f"{size}",
        f"{size}",
        "-ot",
        "Byte",
        *georef,
        *options,
        path,
    )
    return path  # fmt: skip


def make_cog(folder, name: str, source, *options: str):
    path = folder / name
    gdal(
        "gdal_translate",
        "-q",
        "-of",
        "COG",
        "-co",
        "BLOCKSIZE=256",
        "-co",
        "COMPRESS=DEFLATE",
        *options,
        source,
        path,
    )
    return path  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("geotiff")
    strips = make_geotiff(folder, "strips.tif")
    rotated_vrt = folder / "rotated.vrt"
    rotated_vrt.write_text(ROTATED_VRT)
    rotated = folder / "rotated.tif"
    gdal("gdal_translate", "-q", str(rotated_vrt), str(rotated))
    return {
        "strips": strips,
        "cog": make_cog(folder, "cog.tif", strips),
        "big": make_geotiff(folder, "big.tif", srs="EPSG:4326", size=64,
                            options=("-co", "BIGTIFF=YES", "-co", "ENDIANNESS=BIG", "-co", "TILED=YES")),
        "rotated": rotated,
        "plain": make_geotiff(folder, "plain.tif", srs=None, size=16),
    }  # fmt: skip


def detect(resp, ctx=None):
    return asyncio.run(GeoTIFFDetector().detect(resp, ctx or context(types=TYPES)))


def detect_served(path, ctx_fetch: LoopbackFetch, *, complete: bool):
    """Detect the file at ``path`` served from a loopback server, as the crawl saw it (whole or not read)."""

    async def run():
        async with serve({"/data/image.tif": file_handler(path)}) as base:
            seen = await ctx_fetch(base + "/data/image.tif")
            if not complete:
                seen.body, seen.complete = b"", False  # as the fetcher leaves a body over its cap
            return await GeoTIFFDetector().detect(seen, context(ctx_fetch, types=TYPES))

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("url", "headers", "body"),
    [
        ("http://h/dem.TIF", {}, b""),
        ("http://h/dem.tiff", {}, b""),
        ("http://h/get?id=1", {"content-type": "image/tiff; application=geotiff; profile=cloud-optimized"}, b""),
        ("http://h/get?id=1", {"content-disposition": "attachment; filename=dem.tif"}, b""),
        ("http://h/get?id=1", {}, b"II*\x00\x08\x00\x00\x00"),
        ("http://h/get?id=1", {}, b"MM\x00+\x00\x08\x00\x00"),
    ],
)  # fmt: skip
def test_accepts(url, headers, body):
    assert GeoTIFFDetector().accepts(response(url, body, headers=headers))


@pytest.mark.parametrize(
    ("url", "headers"), [("http://h/a.png", {"content-type": "image/png"}), ("http://h/a.zip", {})]
)
def test_does_not_accept(url, headers):
    assert not GeoTIFFDetector().accepts(response(url, b"\x89PNG\r\n", headers=headers))


def test_cog_downloaded_whole(files):
    data = files["cog"].read_bytes()
    ctx = context(types=TYPES)
    [resource] = detect(response("http://H/dem/cog.tif", data), ctx)
    assert (resource.url, resource.type) == ("http://h/dem/cog.tif", "GEOTIFF")
    assert resource.bbox == pytest.approx(UTM_WGS84)
    assert resource.extra == {
        "width": 1024,
        "height": 1024,
        "crs": "EPSG:32633",
        "layout": "tiled",
        "tile_size": [256, 256],
        "overviews": 2,
        "cog_like": True,
        "bigtiff": False,
        "inspected": "download",
    }
    [dataset] = resource.datasets
    assert (dataset.name, dataset.extra["crs"]) == ("cog", "EPSG:32633")
    assert resource.content_sha256 is not None
    assert ctx.stats["geotiff/found/download"] == 1


def test_stripped_geotiff_is_not_cog_like(files):
    [resource] = detect(response("http://h/strips.tif", files["strips"].read_bytes()))
    assert resource.extra["layout"] == "stripped" and resource.extra["overviews"] == 0
    assert resource.extra["cog_like"] is False
    assert resource.bbox == pytest.approx(UTM_WGS84)


def test_big_endian_bigtiff_in_geographic_crs(files):
    data = files["big"].read_bytes()
    assert data.startswith(b"MM\x00+")
    [resource] = detect(response("http://h/big.tif", data))
    assert resource.extra["bigtiff"] is True and resource.extra["crs"] == "EPSG:4326"
    assert resource.extra["layout"] == "tiled"
    assert resource.bbox == pytest.approx((10.0, 47.0, 11.0, 48.0))


def test_model_transformation(files):
    [resource] = detect(response("http://h/rotated.tif", files["rotated"].read_bytes()))
    # corners of the 100 x 50 grid: x = 10 + 0.01 i + 0.002 j, y = 50 + 0.001 i - 0.01 j
    assert resource.bbox == pytest.approx((10.0, 49.5, 11.1, 50.1))


def test_large_file_read_with_one_range_request(files):
    fetch = LoopbackFetch()
    [resource] = detect_served(files["strips"], fetch, complete=False)
    assert fetch.sent[-1] == {"Range": f"bytes=0-{HEADER_BYTES - 1}"}
    # the first GET is the test's own; the detector's Range read adds one header's worth, no more
    assert fetch.requests == 2 and fetch.bytes - files["strips"].stat().st_size == HEADER_BYTES
    assert resource.extra["inspected"] == "range" and resource.content_sha256 is None
    assert resource.bbox == pytest.approx(UTM_WGS84)


def test_plain_tiff_is_not_a_geotiff(files):
    ctx = context(types=TYPES)
    assert detect(response("http://h/plain.tif", files["plain"].read_bytes()), ctx) == []
    assert ctx.stats["geotiff/miss/not_geotiff"] == 1


# --- CRS and footprint by GDAL: the shapes of tests/data/files/README.md, downloaded whole or read by Range ---


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", NotGeoreferencedWarning
        )  # the far directory's file starts without one
        return geotiff_cases(tmp_path_factory.mktemp("cases"))


def expected_footprint(crs, extent):
    if crs is None:
        return None
    return Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform_bounds(*extent, densify_pts=21)


CASES = [
    "user_defined",
    "prime_meridian",
    "grads",
    "pixel_is_point",
    "esri_wkt",
    "long_keys",
    "directory_far",
    "unknown_crs",
]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("complete", [True, False], ids=["downloaded", "range"])
def test_gdal_places_every_crs_it_knows_and_leaves_the_rest_null(cases, name, complete):
    path, crs, extent = cases[name]
    fetch = LoopbackFetch()
    [resource] = detect_served(path, fetch, complete=complete)
    expected = expected_footprint(crs, extent)
    if expected is None:
        assert resource.bbox is None and resource.datasets[0].bbox is None  # never raw numbers as degrees
    else:
        assert resource.bbox == pytest.approx(expected, abs=1e-9)
    assert resource.extra["inspected"] == ("download" if complete else "range")


def test_the_crs_is_named_by_its_epsg_code_or_its_wkt(cases):
    found = {name: detect(response(f"http://h/{name}.tif", cases[name][0].read_bytes()))[0] for name in CASES}
    assert found["grads"].extra["crs"] == "EPSG:4807"
    assert found["long_keys"].extra["crs"] == "EPSG:32633"
    assert found["prime_meridian"].extra["crs"].startswith('GEOGCS["NTF (Paris) in degrees"')
    assert 'PRIMEM["Paris",2.33722917' in found["prime_meridian"].extra["crs"]
    for name in ("user_defined", "esri_wkt"):
        assert "Transverse_Mercator" in found[name].extra["crs"] and "15.5" in found[name].extra["crs"]


def test_a_directory_beyond_the_head_costs_one_more_range_request(cases):
    path = cases["directory_far"][0]
    assert path.stat().st_size > HEADER_BYTES
    fetch = LoopbackFetch()
    ctx = context(fetch, types=TYPES)

    async def run():
        async with serve({"/far.tif": file_handler(path)}) as base:
            seen = response(base + "/far.tif", b"", headers={"content-type": "image/tiff"}, complete=False)
            return await GeoTIFFDetector().detect(seen, ctx)

    [resource] = asyncio.run(run())
    (offset,) = struct.unpack_from("<I", path.read_bytes(), 4)
    assert offset > HEADER_BYTES
    assert fetch.sent == [
        {"Range": f"bytes=0-{HEADER_BYTES - 1}"},
        {"Range": f"bytes={offset}-{offset + HEADER_BYTES - 1}"},
    ]
    assert ctx.stats["geotiff/range_requests"] == 2 and ctx.stats["geotiff/directory_further_in"] == 1
    assert resource.extra["crs"] == "EPSG:32633"


# --- titles from the file's metadata (tests/data/files/README.md) --------------------------------------------

# A processing pipeline's record, as satellite products write it into ImageDescription.
PIPELINE = json.dumps({
    "surface_reflectance": {"algorithm": "dos1", "aerosol_source": "climatology", "aerosol_used": 0.118,
                            "haze_coverage": 0.02, "sun_azimuth": 141.7, "sun_zenith": 38.25, "version": "1.4"},
    "cloud_mask": {"method": "threshold", "cloud_cover": 0.0, "shadow_cover": 0.0},
})  # fmt: skip


@pytest.mark.parametrize(
    ("srs", "bands", "options", "bbox"),
    [
        # a COG whose DocumentName is the path of the file it was made from: no title, nor the file name it
        # ends in (rio-cogeo's image_rioCOG_gdal3.1.tif)
        ("EPSG:4326", 3, ("-of", "COG", "-co", "BLOCKSIZE=256", "-co", "COMPRESS=DEFLATE",
                          "-mo", "TIFFTAG_DOCUMENTNAME=/home/mapper/relief/testdata/hillshade.tif",
                          "-mo", "TIFFTAG_XRESOLUTION=72", "-mo", "TIFFTAG_YRESOLUTION=72",
                          "-mo", "TIFFTAG_RESOLUTIONUNIT=2"), (10.0, 47.0, 11.0, 48.0)),
        # ImageDescription is a JSON blob of a processing pipeline: neither title nor abstract (rasterio's
        # all-nodata.tif)
        ("EPSG:32633", 4, ("-ot", "UInt16", "-co", "TILED=YES", "-co", "COMPRESS=LZW", "-co", "PREDICTOR=2",
                           "-co", "INTERLEAVE=BAND", "-colorinterp_4", "undefined",
                           "-mo", f"TIFFTAG_IMAGEDESCRIPTION={PIPELINE}",
                           "-mo", "TIFFTAG_DATETIME=2025:06:14 09:12:30"), None),
    ],
)  # fmt: skip
def test_metadata_that_names_nothing_is_no_title(tmp_path, srs, bands, options, bbox):
    source = make_geotiff(tmp_path, "source.tif", srs=srs, size=512, options=("-bands", f"{bands}"))
    path = tmp_path / "unnamed.tif"
    gdal("gdal_translate", "-q", "-a_nodata", "0", *options, str(source), str(path))
    [resource] = detect(response("http://h/unnamed.tif", path.read_bytes()))
    assert (resource.title, resource.abstract, resource.datasets[0].title) == (None, None, None)
    if bbox:
        assert resource.bbox == pytest.approx(bbox)
    else:
        assert resource.extra["crs"] == "EPSG:32633"


@pytest.mark.parametrize(
    ("options", "title", "abstract"),
    [
        # a GDAL_METADATA item naming the dataset, as rio-cogeo's image_tags.tif carries it
        (("-mo", "DatasetName=my useful dataset"), "my useful dataset", None),
        (("-mo", "TIFFTAG_DOCUMENTNAME=Alpine relief 2024", "-mo", "TIFFTAG_IMAGEDESCRIPTION=Shaded, 20 m"),
         "Alpine relief 2024", "Shaded, 20 m"),
        (("-mo", "TIFFTAG_IMAGEDESCRIPTION=Alpine relief 2024"), "Alpine relief 2024", None),
        (("-mo", "TIFFTAG_IMAGEDESCRIPTION=Relief of the Alps\nfrom the 2024 survey, 20 m cells"),
         None, "Relief of the Alps\nfrom the 2024 survey, 20 m cells"),
        (("-mo", "TITLE=  Sea\tsurface  ", "-mo", "TIFFTAG_DOCUMENTNAME=C:\\data\\sst.tif"), "Sea surface", None),
    ],
)  # fmt: skip
def test_the_title_is_the_files_own_metadata(tmp_path, options, title, abstract):
    source = make_geotiff(tmp_path, "source.tif", size=64)
    path = tmp_path / "named.tif"
    gdal("gdal_translate", "-q", *options, str(source), str(path))
    for complete in (True, False):  # downloaded whole, or its header read by Range
        [resource] = detect_served(path, LoopbackFetch(), complete=complete)
        assert (resource.title, resource.abstract, resource.datasets[0].title) == (title, abstract, title)
        assert resource.datasets[0].name == "image"  # the file's stem names the dataset, never the resource
