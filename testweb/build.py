"""Generates the whole test web under var/testweb: data, files, pages, server configuration, manifest."""

from __future__ import annotations

import hashlib
import json
import shutil
from typing import Any

from testweb import catalogue, data, files, httpd, mapserver, ogcapi, sites, stac, tiles, truth, wps
from testweb.layout import BUILD_STAMP, CONF, DATA, LOGS, MANIFEST, RUN, SITES, SOURCE


def source_digest() -> str:
    """Changes whenever a file of testweb/ or the set of catalogue records changes."""
    digest = hashlib.sha256()
    for path in sorted(SOURCE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(SOURCE).as_posix().encode() + b"\0" + path.read_bytes())
    digest.update(json.dumps(catalogue.cite_identifiers()).encode())
    return digest.hexdigest()


def is_built() -> bool:
    return MANIFEST.exists() and BUILD_STAMP.exists() and BUILD_STAMP.read_text() == source_digest()


def build() -> dict[str, Any]:
    manifest = truth.manifest()  # first: a broken page graph stops the build before any work
    for generated in (DATA, SITES, CONF):
        shutil.rmtree(generated, ignore_errors=True)
    for folder in (LOGS, RUN):
        folder.mkdir(parents=True, exist_ok=True)
    data.write_vectors(mapserver.VECTOR_DIR)
    data.write_rasters(mapserver.RASTER_DIR)
    files.write_files()
    stac.write_catalog()
    sites.write_sites()
    mapserver.write_config()
    mapserver.write_echo_document()
    httpd.write_config()
    tiles.write_config()
    wps.write_config()
    ogcapi.write_config()
    catalogue.write_config()
    catalogue.load_records()
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    BUILD_STAMP.write_text(source_digest())
    return manifest
