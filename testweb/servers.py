"""The servers of the test web, started, checked and stopped by the stack's process supervisor.

Each server runs in its own session (process group), so stopping it also ends what it spawned (MapServer
FastCGI processes, gunicorn workers). Pid files live in var/testweb/run/, output in var/testweb/logs/.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

from stack.supervisor import Service, StartError, answers, launch, running_pid, state, stop, wait_until_up
from stack.supervisor import start as start_services
from testweb import arcgis, catalogue, httpd, mapserver, ogcapi, stac, tiles, wps
from testweb.layout import (
    ARCGIS,
    DECOYS,
    LOGS,
    MAIN_PYTHON,
    MAPPROXY,
    OGCAPI,
    PYCSW,
    PYWPS,
    RUN,
    SERVER_VENV,
    SITE_PORTS,
    SOURCE,
    STAC_API,
    origin,
)
from testweb.model import with_query

__all__ = ["SERVERS", "Server", "StartError", "answers", "launch", "running_pid", "stop", "wait_until_up"]


@dataclass(frozen=True)
class Server(Service):
    """A server of the test web; its pid file and output go to var/testweb/ (looked up when it is made)."""

    run_dir: Path = field(default_factory=lambda: RUN, kw_only=True)
    log_dir: Path = field(default_factory=lambda: LOGS, kw_only=True)


def _capabilities(url: str, service: str) -> str:
    return with_query(url, f"service={service}&request=GetCapabilities")


def _gunicorn(name: str, port: int, app: str, config: tuple[str, str], check: str) -> Server:
    """A WSGI server of .venv-testweb; ``config`` is the (variable, file) naming its configuration."""
    command = [
        str(SERVER_VENV / "bin" / "gunicorn"),
        "--bind",
        f"127.0.0.1:{port}",
        "--chdir",
        str(SOURCE / "wsgi"),
    ]
    command += ["--worker-class", "gthread", "--workers", "1", "--threads", "4"]
    command += ["--access-logfile", str(LOGS / f"{port}-{name}.access.log")]
    command += ["--error-logfile", str(LOGS / f"{name}.error.log"), app]
    return Server(name, tuple(command), (check,), {config[0]: config[1]})


LIGHTTPD = Server(
    "lighttpd",
    ("lighttpd", "-D", "-f", str(httpd.CONFIG_FILE)),
    (*(f"{origin(port)}/" for port in SITE_PORTS), *(_capabilities(m.url, "WMS") for m in mapserver.SERVED)),
)
_DECOYS_ARGS = ["--port", str(DECOYS), "--echo-document", str(mapserver.ECHO_DOCUMENT)]
_DECOYS_ARGS += ["--access-log", str(LOGS / f"{DECOYS}-decoys.access.log")]
DECOY_SERVER = Server(
    "decoys",
    (str(MAIN_PYTHON), "-m", "testweb.decoys", *_DECOYS_ARGS),
    (_capabilities(mapserver.ECHO.url, "WMS"),),
)
SERVERS = (
    LIGHTTPD,
    DECOY_SERVER,
    _gunicorn("pycsw", PYCSW, "pycsw_app:application", ("PYCSW_CONFIG", str(catalogue.CONFIG_FILE)),
              _capabilities(catalogue.URL, "CSW")),
    _gunicorn("pywps", PYWPS, "pywps_app:application", ("PYWPS_CFG", str(wps.CONFIG_FILE)),
              _capabilities(wps.URL, "WPS")),
    _gunicorn("mapproxy", MAPPROXY, "mapproxy_app:application", ("MAPPROXY_CONFIG", str(tiles.CONFIG_FILE)),
              _capabilities(tiles.KVP_URL, "WMTS")),
    _gunicorn("pygeoapi", OGCAPI, "pygeoapi_app:application", ("PYGEOAPI_CONFIG", str(ogcapi.CONFIG_FILE)),
              ogcapi.URL),
    Server(stac.API_NAME, stac.api_command(STAC_API), (stac.API_URL,), stac.API_ENV),
    Server("arcgis", (str(MAIN_PYTHON), "-m", "testweb.arcgis", "--port", str(ARCGIS), "--access-log",
                      str(LOGS / f"{ARCGIS}-arcgis.access.log")), (f"{arcgis.DIRECTORY_10}?f=json",)),
)  # fmt: skip


def start_all() -> None:
    """Starts every server not already up; on failure stops what it started and raises StartError."""
    if not (SERVER_VENV / "bin" / "gunicorn").exists():
        raise StartError("the server venv is missing: run testweb/setup.sh")
    start_services(SERVERS)


def stop_all() -> list[str]:
    return [s.name for s in reversed(SERVERS) if stop(s)]


def flush_logs() -> None:
    """lighttpd buffers its access logs for a few seconds under load; SIGHUP makes it write them out now."""
    pid = running_pid(LIGHTTPD)
    if pid is not None:
        os.kill(pid, signal.SIGHUP)


def status() -> dict[str, str]:
    """Server name -> 'up', 'not answering' or 'stopped'."""
    return {server.name: state(server) for server in SERVERS}
