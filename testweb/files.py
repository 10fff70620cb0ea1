"""The KML, KMZ and zipped-shapefile files planted on the web sites, and the ZIP that is no shapefile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testweb.layout import AGENCY, BLOG, DOWNLOADS, PORTAL, UNIVERSITY, origin, site_root
from testweb.model import Decoy, Planted

LARGE_ZIP_BYTES = 12 * 1024 * 1024  # above the crawler's 10 MB download cap


@dataclass(frozen=True)
class PlantedFile:
    port: int
    path: str  # where the file lies on the site
    type: str  # KML or SHAPEFILE
    dataset: str  # its content: a name of data.FILE_CONTENTS, also its layer name
    served_at: str | None = None  # the URL path when it differs from ``path`` (a download script)
    # the title and abstract written into it: a KML document's name and description (GDAL names only the
    # layer's Folder, the title without them), a shapefile's metadata member (no title without it)
    title: str | None = None
    abstract: str | None = None

    @property
    def url(self) -> str:
        return origin(self.port) + (self.served_at or self.path)

    @property
    def file(self) -> Path:
        return site_root(self.port) / self.path.lstrip("/")

    def write(self) -> None:
        from testweb import data  # geopandas: loaded only to build, not to start or stop

        suffix = self.file.suffix
        if self.dataset == "parcels":
            data.write_large_shapefile_zip(self.dataset, self.file, LARGE_ZIP_BYTES)
        elif suffix == ".kml":
            data.write_kml(self.dataset, self.file, self.title, self.abstract)
        elif suffix == ".kmz":
            data.write_kmz(self.dataset, self.file)
        else:
            data.write_shapefile_zip(self.dataset, self.file, metadata=(self.title, self.abstract))

    @property
    def found_title(self) -> str | None:
        """The title a crawl reads from the file's content."""
        return self.title or (self.dataset if self.type == "KML" else None)

    def planted(self) -> Planted:
        return Planted(self.url, {self.type: (self.dataset,)}, titled=True, title=self.found_title)


TRAILS = PlantedFile(
    AGENCY, "/data/trails.kml", "KML", "trails", title="Hiking trails of Lapland",
    abstract="Kungsleden and Padjelanta, as the agency's rangers walked them in 2023.",
)  # fmt: skip
DISTRICTS = PlantedFile(
    AGENCY, "/data/districts.zip", "SHAPEFILE", "districts", title="Central Tokyo wards",
    abstract="Chuo, Minato and Shinjuku: ward boundaries, simplified.",
)  # fmt: skip
# No extension in the URL: lighttpd rewrites it and names the file in Content-Disposition.
PARKS = PlantedFile(DOWNLOADS, "/dl/parks-5.kmz", "KML", "parks", served_at="/download?id=5")
PARKS_FILENAME = "parks.kmz"
PARCELS = PlantedFile(DOWNLOADS, "/files/parcels-large.zip", "SHAPEFILE", "parcels")
COASTLINE = PlantedFile(DOWNLOADS, "/files/coastline.zip", "SHAPEFILE", "coastline")
WETLANDS = PlantedFile(DOWNLOADS, "/files/wetlands.kml", "KML", "wetlands")  # only the catalogue links it
RESTRICTED = PlantedFile(DOWNLOADS, "/files/restricted-plots.zip", "SHAPEFILE", "restricted_plots")
HIKE = PlantedFile(BLOG, "/files/hike.kmz", "KML", "hike")
OLD_BOUNDARIES = PlantedFile(PORTAL, "/files/old-boundaries.kml", "KML", "old_boundaries")
OLDER_BOUNDARIES = PlantedFile(PORTAL, "/files/older-boundaries.kml", "KML", "older_boundaries")
FIELD_SURVEY = PlantedFile(UNIVERSITY, "/private/field-survey.kml", "KML", "field_survey")
FILES = (
    TRAILS,
    DISTRICTS,
    PARKS,
    PARCELS,
    COASTLINE,
    WETLANDS,
    RESTRICTED,
    HIKE,
    OLD_BOUNDARIES,
    OLDER_BOUNDARIES,
    FIELD_SURVEY,
)

README_ZIP_PATH = "/files/readme-only.zip"
README_ZIP = Decoy(origin(DOWNLOADS) + README_ZIP_PATH, "a ZIP holding a CSV and a readme, no shapefile")


def write_files() -> None:
    from testweb import data

    for planted in FILES:
        planted.write()
    data.write_zip_without_shapefile(site_root(DOWNLOADS) / README_ZIP_PATH.lstrip("/"))
