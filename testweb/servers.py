"""Starting, checking and stopping the servers of the test web.

Each server runs in its own session (process group), so stopping it also ends what it spawned (MapServer
FastCGI processes, gunicorn workers). Pid files live in var/testweb/run/.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path

from testweb import catalogue, httpd, mapserver, tiles, wps
from testweb.layout import (
    DECOYS,
    LOGS,
    MAIN_PYTHON,
    MAPPROXY,
    PYCSW,
    PYWPS,
    REPO,
    RUN,
    SERVER_VENV,
    SITE_PORTS,
    SOURCE,
    origin,
)
from testweb.model import DIRECT, with_query

START_TIMEOUT = 45.0
STOP_TIMEOUT = 5.0


@dataclass(frozen=True)
class Server:
    name: str
    command: tuple[str, ...]
    checks: tuple[str, ...]  # URLs that must answer 200 once the server is up
    env: dict[str, str] = field(default_factory=dict)

    @property
    def pid_file(self) -> Path:
        return RUN / f"{self.name}.pid"

    @property
    def ports(self) -> list[int]:
        return sorted({int(url.split(":")[2].split("/")[0]) for url in self.checks})


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
)  # fmt: skip


class StartError(RuntimeError):
    """Raised by ``start`` when a server cannot be started or does not answer in time."""


def answers(url: str, timeout: float = 3.0) -> bool:
    try:
        with DIRECT.open(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _running(group: int) -> list[int]:
    """Pids of the group's running processes. Zombies do not count: the container's init may reap late."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(group, os.WNOHANG)  # our own child, when this process started it
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, _, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
        except OSError:  # the process ended while we looked
            continue
        if int(pgrp) == group and state != "Z":
            pids.append(int(stat.parent.name))
    return pids


def _wait_while(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def running_pid(server: Server) -> int | None:
    """The pid of our running server, from its pid file; None (and no stale file) when it is gone."""
    try:
        pid = int(server.pid_file.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if not _running(pid):
        server.pid_file.unlink(missing_ok=True)
        return None
    return pid


def is_up(server: Server) -> bool:
    return running_pid(server) is not None and all(answers(url) for url in server.checks)


def _connectable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def launch(server: Server) -> None:
    taken = [p for p in server.ports if _connectable(p)]
    if taken:
        raise StartError(f"{server.name}: port {taken} is already in use by another program")
    RUN.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / f"{server.name}.out").open("ab") as out:
        process = subprocess.Popen(
            server.command,
            cwd=REPO,
            env=os.environ | server.env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server.pid_file.write_text(str(process.pid))


def wait_until_up(servers: list[Server], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    pending = list(servers)
    while pending:
        pending = [s for s in pending if not is_up(s)]
        for server in pending:
            if running_pid(server) is None:
                raise StartError(f"{server.name} exited; see {LOGS / (server.name + '.out')}")
        if pending and time.monotonic() > deadline:
            names = ", ".join(s.name for s in pending)
            raise StartError(f"not answering after {timeout:.0f} s: {names}; see the logs in {LOGS}")
        time.sleep(0.2)


def start_all() -> None:
    """Starts every server not already up; on failure stops what it started and raises StartError."""
    if not (SERVER_VENV / "bin" / "gunicorn").exists():
        raise StartError("the server venv is missing: run testweb/setup.sh")
    started = []
    try:
        for server in SERVERS:
            if is_up(server):
                continue
            stop(server)
            launch(server)
            started.append(server)
        wait_until_up(started)
    except StartError:
        for server in started:
            stop(server)
        raise


def stop(server: Server) -> bool:
    """Ends the server, then whatever it spawned and left behind; True if it was running."""
    pid = running_pid(server)
    if pid is None:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    _wait_while(lambda: pid in _running(pid), STOP_TIMEOUT)
    # MapServer's idle FastCGI processes outlive SIGTERM until their next request
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    _wait_while(lambda: bool(_running(pid)), 1.0)
    server.pid_file.unlink(missing_ok=True)
    return True


def stop_all() -> list[str]:
    return [s.name for s in reversed(SERVERS) if stop(s)]


def flush_logs() -> None:
    """lighttpd buffers its access logs for a few seconds under load; SIGHUP makes it write them out now."""
    pid = running_pid(LIGHTTPD)
    if pid is not None:
        os.kill(pid, signal.SIGHUP)


def status() -> dict[str, str]:
    """Server name -> 'up', 'not answering' or 'stopped'."""
    states = {}
    for server in SERVERS:
        if running_pid(server) is None:
            states[server.name] = "stopped"
        else:
            states[server.name] = "up" if is_up(server) else "not answering"
    return states
