"""The test web's own tooling on broken input: a bad page graph, a taken port, a server that dies at once,
a capabilities answer that is an exception. Each ends in a clear error, and nothing is left running."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from testweb import capture, servers, sites, truth, web
from testweb.model import canonical


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """Pid files and logs of the servers under test go to a temporary folder, away from the real test web."""
    monkeypatch.setattr(servers, "RUN", tmp_path / "run")
    monkeypatch.setattr(servers, "LOGS", tmp_path / "logs")
    return tmp_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_canonical_drops_only_the_ogc_request_parameters():
    url = (
        "http://127.0.0.1:18010/cgi-bin/mapserv?map=regions&SERVICE=WMS&Request=GetCapabilities&version=1.3.0"
    )
    assert canonical(url) == "http://127.0.0.1:18010/cgi-bin/mapserv?map=regions"
    assert canonical("http://h/ows?service=WFS") == "http://h/ows"


def test_a_link_to_nothing_planted_stops_the_build(monkeypatch):
    stray = web.Page(
        "/stray.html", "Stray", "A link to nowhere.", (web.Link("http://127.0.0.1:18004/nope.kml", "x"),)
    )
    portal = web.SITES[0]
    seed = replace(portal.pages[0], links=(*portal.pages[0].links, web.Link("stray.html", "Stray page")))
    patched = replace(portal, pages=(seed, stray, *portal.pages[1:]))
    monkeypatch.setattr(web, "SITES", (patched, *web.SITES[1:]))
    with pytest.raises(ValueError, match=r"stray.html links to http://127.0.0.1:18004/nope.kml"):
        truth.manifest()


def test_an_unknown_link_style_is_refused():
    with pytest.raises(ValueError, match="unknown link style 'blink'"):
        sites.render_link(web.Link("http://x/", "x", "blink"), 0)


def test_plain_text_links_keep_their_entities_and_script_links_do_not():
    text = sites.render_link(web.Link("http://h/w?a=1&b=2", "label", "text"), 0)
    script = sites.render_link(web.Link("http://h/w?a=1&b=2", "source", "script"), 0)
    assert "http://h/w?a=1&amp;b=2" in text
    assert '"http://h/w?a=1&b=2"' in script


def test_a_taken_port_is_reported_and_nothing_starts(scratch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = servers.Server("probe", ("sleep", "30"), (f"http://127.0.0.1:{port}/",))
        with pytest.raises(servers.StartError, match=rf"probe: port \[{port}\] is already in use"):
            servers.launch(server)
    assert servers.running_pid(server) is None


def test_a_server_that_exits_at_once_is_reported(scratch):
    server = servers.Server(
        "quitter", ("sh", "-c", "echo no config; exit 3"), (f"http://127.0.0.1:{free_port()}/",)
    )
    servers.launch(server)
    with pytest.raises(servers.StartError, match=r"quitter exited; see .*quitter\.out"):
        servers.wait_until_up([server], timeout=10)
    assert (scratch / "logs" / "quitter.out").read_text() == "no config\n"


def test_a_failed_start_stops_what_it_started(scratch, monkeypatch):
    port = free_port()
    healthy = servers.Server(
        "healthy",
        (sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"),
        (f"http://127.0.0.1:{port}/",),
    )
    broken = servers.Server("broken", ("sh", "-c", "exit 3"), (f"http://127.0.0.1:{free_port()}/",))
    monkeypatch.setattr(servers, "SERVERS", (healthy, broken))
    with pytest.raises(servers.StartError, match="broken exited"):
        servers.start_all()
    assert servers.running_pid(healthy) is None and servers.running_pid(broken) is None
    assert not servers.answers(f"http://127.0.0.1:{port}/", timeout=0.5)


def process_state(pid: int) -> str | None:
    """The state letter of a process (R, S, Z...), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return None


def test_stop_ends_the_whole_process_group(scratch):
    server = servers.Server(
        "family", ("sh", "-c", "sleep 60 & sleep 60 & wait"), (f"http://127.0.0.1:{free_port()}/",)
    )
    servers.launch(server)
    pid = servers.running_pid(server)
    time.sleep(0.2)  # the shell starts its children
    family = [
        int(p)
        for p in subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True).stdout.split()
    ]
    assert len(family) == 3
    assert servers.stop(server)
    assert [process_state(p) for p in family if process_state(p) not in (None, "Z")] == []
    assert not server.pid_file.exists()
    assert not servers.stop(server)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'<ServiceExceptionReport version="1.3.0"/>', "ServiceExceptionReport"),
        (b'<WMS_Capabilities xmlns="http://www.opengis.net/wms" version="1.1.1"/>', "version='1.1.1'"),
    ],
)
def test_capture_refuses_what_is_not_the_capabilities_asked_for(body, message):
    with pytest.raises(capture.CaptureError, match=message):
        capture.checked(body, "http://127.0.0.1:18010/x", "1.3.0")


def test_the_planted_files_carry_the_titles_the_truth_records(tmp_path, monkeypatch):
    """The title the manifest records for a planted file is the one the detectors read from the file as
    built (a KML document's name, a shapefile's metadata, GDAL's layer folder, none)."""
    import asyncio

    from geoweb.detect import load_detector
    from tests.data.files.make_fixtures import context, response
    from testweb import files

    monkeypatch.setattr(files, "site_root", lambda port: tmp_path / str(port))  # away from the real web
    recorded = {r["url"]: r for r in truth.manifest()["resources"] if "title" in r}
    for planted in (files.TRAILS, files.DISTRICTS, files.PARKS, files.COASTLINE):
        planted.write()
        detector = load_detector("kml" if planted.type == "KML" else "shapefile")
        [resource] = asyncio.run(detector.detect(response(planted.url, planted.file.read_bytes()), context()))
        assert resource.title == recorded[planted.url]["title"] == planted.found_title
    assert (files.TRAILS.found_title, files.DISTRICTS.found_title) == (
        "Hiking trails of Lapland",
        "Central Tokyo wards",
    )
    assert (files.PARKS.found_title, files.COASTLINE.found_title) == ("parks", None)


def test_planted_files_come_out_the_same_bytes_at_every_build(tmp_path, monkeypatch):
    """A rebuilt test web must look unchanged to a revisit: no zip member or DBF header carries the build's
    date (ZIP times have a 2 s grain, hence the pause)."""
    import zipfile

    from testweb import files

    monkeypatch.setattr(files, "site_root", lambda port: tmp_path / str(port))
    planted = (files.COASTLINE, files.DISTRICTS, files.HIKE, files.PARKS)
    first = {}
    for file in planted:
        file.write()
        first[file.url] = file.file.read_bytes()
    time.sleep(2.1)
    for file in planted:
        file.write()
        assert file.file.read_bytes() == first[file.url], file.url
    with zipfile.ZipFile(files.COASTLINE.file) as z:
        [dbf] = [name for name in z.namelist() if name.endswith(".dbf")]
        assert z.read(dbf)[1:4] == bytes([124, 1, 1])  # last update 2024-01-01, not the day of the build
