"""Fixtures for tests against the local GeoWeb of real servers (testweb/).

``testweb`` starts the web once per session (or reuses one already running), yields its manifest and stops it
at the end if it started it. ``access_logs`` reads the requests the web's servers answered.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from testweb.layout import LOGS, MANIFEST, REPO, SERVER_VENV
from testweb.mapserver import MAPSERV_BIN

# Combined Log Format, written by every server of the test web; lighttpd adds the time in epoch milliseconds
LOG_LINE = re.compile(r'^\S+ \S+ \S+ \[[^\]]+\] "(\S+) (\S+)[^"]*" (\d{3}) \S+ "[^"]*" "([^"]*)"(?: (\d+))?$')


def run_testweb(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "testweb", *command], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def missing_prerequisites() -> list[str]:
    missing = [b for b in ("lighttpd", "gdal_translate") if shutil.which(b) is None]
    missing += [str(p) for p in (Path(MAPSERV_BIN), SERVER_VENV / "bin" / "gunicorn") if not p.exists()]
    return missing


@pytest.fixture(scope="session")
def testweb() -> dict:
    missing = missing_prerequisites()
    if missing:
        pytest.skip(f"the test web is not installed (missing {', '.join(missing)}): run testweb/setup.sh")
    already_running = run_testweb("status").returncode == 0
    if not already_running:
        started = run_testweb("start")
        if started.returncode != 0:
            run_testweb("stop")
            pytest.fail(f"python -m testweb start failed:\n{started.stdout}\n{started.stderr}")
    yield json.loads(MANIFEST.read_text())
    if not already_running:
        run_testweb("stop")


@dataclass(frozen=True)
class Request:
    port: int
    method: str
    target: str  # path and query, as requested
    status: int
    user_agent: str
    millis: int | None  # when it was received (lighttpd only)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.target}"


class AccessLogs:
    """The access logs of the test web (var/testweb/logs/<port>-<name>.access.log), read from a mark on."""

    def __init__(self, folder: Path):
        self.folder = folder

    def _files(self) -> dict[Path, int]:
        return {p: int(p.name.split("-", 1)[0]) for p in self.folder.glob("*.access.log")}

    def mark(self) -> dict[Path, int]:
        """Current sizes: requests logged after this point are the ones ``since`` returns."""
        return {p: p.stat().st_size for p in self._files()}

    def settle(self, quiet: float = 0.3) -> None:
        """Has lighttpd write out its buffered log, then waits until no log has grown for ``quiet`` seconds."""
        from testweb.servers import flush_logs

        flush_logs()
        sizes, since = self.mark(), time.monotonic()
        while time.monotonic() - since < quiet:
            time.sleep(0.25)
            now = self.mark()
            if now != sizes:
                sizes, since = now, time.monotonic()

    def since(self, mark: dict[Path, int]) -> list[Request]:
        self.settle()
        requests = []
        for path, port in self._files().items():
            with path.open("rb") as f:
                f.seek(mark.get(path, 0))
                for line in f.read().decode("utf-8", "replace").splitlines():
                    m = LOG_LINE.match(line)
                    if m:
                        millis = int(m[5]) if m[5] else None
                        requests.append(Request(port, m[1], m[2], int(m[3]), m[4], millis))
        return requests


@pytest.fixture(scope="session")
def access_logs(testweb) -> AccessLogs:
    return AccessLogs(LOGS)
