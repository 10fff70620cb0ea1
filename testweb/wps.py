"""PyWPS: a WPS 1.0.0 endpoint with a few real geometry processes (testweb/wsgi/wps_processes.py)."""

from __future__ import annotations

from string import Template

from testweb.layout import CONF, LOGS, PYWPS, TEMPLATES, VAR, origin
from testweb.model import Planted

CONFIG_FILE = CONF / "pywps.cfg"
URL = f"{origin(PYWPS)}/wps"
PROCESSES = ("buffer", "bbox", "centroid")  # identifiers; keep in step with wsgi/wps_processes.py


def planted() -> list[Planted]:
    return [Planted(URL, {"WPS": PROCESSES})]


def write_config() -> None:
    work = VAR / "pywps"
    for d in (work / "outputs", work / "work"):
        d.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(
        Template((TEMPLATES / "pywps.cfg").read_text()).substitute(
            url=URL,
            output_url=f"{origin(PYWPS)}/outputs/",
            output_dir=work / "outputs",
            work_dir=work / "work",
            log_file=LOGS / "pywps.log",
            database=work / "logs.sqlite",
        )
    )
