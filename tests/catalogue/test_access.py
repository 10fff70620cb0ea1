"""Who may read the catalogue, and what GeoHub's proxy to it lets through: the login by default, anyone when
GEOWEB_CATALOGUE_PUBLIC is set; GET and POST of the two prefixes only, bounded in size and time, and none of
the user's credentials reaching the catalogue's process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from geohub import catalogue as proxy
from geohub.app import create_app
from owslib.csw import CatalogueServiceWeb

pytestmark = pytest.mark.testweb

CAPABILITIES = {"service": "CSW", "request": "GetCapabilities"}


def test_without_a_login_the_catalogue_answers_401(catalogue, auth):
    session = catalogue.geohub.session()
    for url in (catalogue.csw, catalogue.records, f"{catalogue.records}/collections/resources/items"):
        assert session.get(url, params=CAPABILITIES, timeout=30).status_code == 401
        bad = session.get(
            url, params=CAPABILITIES, headers={"Authorization": "Bearer not-a-token"}, timeout=30
        )
        assert bad.status_code in (401, 403)  # Airflow: 403 for a token it cannot read
        assert session.get(url, params=CAPABILITIES, headers=auth, timeout=30).status_code == 200
    assert session.post(catalogue.csw, data=b"<x/>", timeout=30).status_code == 401


def test_only_get_and_post_of_the_two_prefixes_are_forwarded(catalogue, auth):
    session = catalogue.geohub.session(auth["Authorization"].split()[1])
    for method in ("PUT", "DELETE", "PATCH"):
        assert session.request(method, catalogue.csw, timeout=30).status_code == 405
    for path in ("/geohub/cswx", "/geohub/csw/admin", "/geohub/recordsx"):
        assert session.get(f"{catalogue.geohub.base_url}{path}", timeout=30).status_code == 404
    too_large = session.post(catalogue.csw, data=b"x" * (proxy.settings().catalogue_max_request_bytes + 1))
    assert too_large.status_code == 413


@pytest.fixture
def public(monkeypatch) -> Iterator[callable]:
    """``public(upstream, **settings)``: GeoHub's app with the catalogue public, forwarding to ``upstream``."""

    def client(upstream: str, **settings: str) -> TestClient:
        monkeypatch.setenv("GEOWEB_CATALOGUE_PUBLIC", "yes")
        monkeypatch.setenv("GEOWEB_CATALOGUE_UPSTREAM", upstream)
        for name, value in settings.items():
            monkeypatch.setenv(f"GEOWEB_{name.upper()}", value)
        proxy.settings.cache_clear()
        return TestClient(create_app())

    yield client
    proxy.settings.cache_clear()


def test_a_public_catalogue_answers_anyone_what_the_login_sees(public, catalogue, auth):
    client = public(catalogue.upstream)
    answer = client.get("/csw", params=CAPABILITIES)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/xml")
    logged_in = catalogue.geohub.session().get(catalogue.csw, params=CAPABILITIES, headers=auth, timeout=30)
    assert answer.content == logged_in.content
    items = client.get("/records/collections/resources/items", params={"f": "json", "limit": 1})
    assert items.status_code == 200 and items.json()["numberMatched"] > 0


class Recorder(BaseHTTPRequestHandler):
    """A stand-in for the catalogue's process that records the headers it gets and answers as told."""

    seen: list[dict[str, str]] = []
    body = b"<ok/>"
    delay = 0.0  # seconds before the answer
    drip = 0.0  # seconds between two bytes of the body

    def do_GET(self):
        Recorder.seen.append(dict(self.headers))
        time.sleep(Recorder.delay)
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Set-Cookie", "catalogue=1")
        self.send_header("X-Internal", "secret")
        self.send_header("Content-Length", str(len(Recorder.body)))
        self.end_headers()
        step = 1 if Recorder.drip else max(len(Recorder.body), 1)
        for start in range(0, len(Recorder.body), step):
            self.wfile.write(Recorder.body[start : start + step])
            self.wfile.flush()
            time.sleep(Recorder.drip)

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    Recorder.seen, Recorder.body, Recorder.delay, Recorder.drip = [], b"<ok/>", 0.0, 0.0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_no_credential_goes_upstream_and_no_upstream_header_comes_back(public, recorder):
    client = public(recorder)
    headers = {
        "Cookie": "_token=session-secret",
        "Authorization": "Bearer a-token",
        "X-Forwarded-For": "1.2.3.4",
    }
    answer = client.get("/csw", params=CAPABILITIES, headers={**headers, "Accept": "application/xml"})
    assert answer.status_code == 200 and answer.content == b"<ok/>"
    [seen] = Recorder.seen
    assert {name.lower() for name in seen} & {"cookie", "authorization", "x-forwarded-for"} == set()
    assert {name.lower(): value for name, value in seen.items()}["accept"] == "application/xml"
    assert "set-cookie" not in answer.headers and "x-internal" not in answer.headers
    assert answer.headers["content-security-policy"].startswith("default-src 'none'")


def test_an_answer_too_large_or_too_slow_is_a_gateway_error(public, recorder):
    Recorder.body = b"x" * 5000
    assert public(recorder, catalogue_max_response_bytes="4096").get("/csw").status_code == 502
    Recorder.body, Recorder.delay = b"<ok/>", 2.0
    assert public(recorder, catalogue_timeout="0.5").get("/csw").status_code == 504
    Recorder.body, Recorder.delay, Recorder.drip = b"x" * 10, 0.0, 0.2  # each byte in time, not the whole
    assert public(recorder, catalogue_timeout="1").get("/csw").status_code == 504


def test_a_catalogue_that_is_down_is_a_502_with_a_message(public):
    client = public("http://127.0.0.1:9")  # discard: nothing listens
    answer = client.get("/csw", params=CAPABILITIES)
    assert answer.status_code == 502 and answer.json() == {"detail": "the catalogue is not reachable"}


def test_owslib_reads_the_capabilities_through_the_login(catalogue, auth):
    assert (
        CatalogueServiceWeb(catalogue.csw, headers=auth).identification.title == "GeoWeb Harvester catalogue"
    )
