"""Captures the documents of the test web's pygeoapi (0.21) that the OGC API tests read.

Run from the repository root with the test web up (``python -m testweb start``):
``.venv/bin/python -m tests.data.ogcapi.capture``. The JSON documents are asked for as the detector asks
(``Accept: application/json``); the HTML page with ``f=html``, as a link on a web page names it.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

from testweb.model import DIRECT
from testweb.ogcapi import URL

HERE = Path(__file__).resolve().parent
# file -> path under the landing page
DOCUMENTS = {
    "landing.json": "",
    "conformance.json": "conformance",
    "collections.json": "collections",
    "processes.json": "processes",
    "openapi.json": "openapi",
    "collection_lakes.json": "collections/lakes",
    "collection_lakes.html": "collections/lakes?f=html",
}


def capture() -> None:
    for name, path in DOCUMENTS.items():
        request = urllib.request.Request(URL + path, headers={"Accept": "application/json"})
        with DIRECT.open(request, timeout=30) as answer:
            (HERE / name).write_bytes(answer.read())
        print(f"{URL + path} -> {name}")


if __name__ == "__main__":
    capture()
