"""The lighttpd configuration: one socket per site, MapServer behind FastCGI, the download script."""

from __future__ import annotations

from string import Template

from testweb import files, mapserver, stac, web
from testweb.layout import (
    CONF,
    HOST,
    LOGS,
    MAPSERVER,
    RUN,
    SITE_PORTS,
    SITES,
    STAC_CATALOG,
    TEMPLATES,
    site_root,
)

CONFIG_FILE = CONF / "lighttpd.conf"
SITE_NAMES = {site.port: site.name.lower().replace(" ", "-") for site in web.SITES}


def access_log(port: int) -> str:
    return str(LOGS / f"{port}-{SITE_NAMES[port]}.access.log")


def _mapserver_block() -> str:
    """MapServer's own FastCGI loop, spawned by lighttpd; clean paths select their map with MS_MAPFILE."""

    def backend(prefix: str, name: str, procs: int) -> str:
        return (
            f'    "{prefix}" => (("socket" => "{RUN / name}.sock", "check-local" => "disable", '
            f'"max-procs" => {procs}, "bin-path" => "{mapserver.MAPSERV_BIN}", '
            f'"bin-environment" => ("MAPSERVER_CONFIG_FILE" => "{mapserver.CONFIG_FILE}")))'
        )

    clean = [m for m in mapserver.SERVED if m.clean_path]
    servers = [backend("/cgi-bin/mapserv", "mapserv", 2)] + [backend(m.clean_path, m.key, 1) for m in clean]
    lines = ["  fastcgi.server = (", ",\n".join(servers), "  )"]
    for m in clean:
        lines.append(f'  $HTTP["url"] == "{m.clean_path}" {{')
        lines.append(f'    setenv.add-environment = ("MS_MAPFILE" => "{m.mapfile}")')
        lines.append("  }")
    return "\n".join(lines)


def _download_block() -> str:
    """A download script as many portals have one: no file name in the URL, the name in Content-Disposition."""
    script = files.PARKS.served_at.replace("?", "\\?")
    folder = files.PARKS.path.rsplit("/", 1)[0] + "/"
    return (
        f'  url.rewrite-once = ("^{script}$" => "{files.PARKS.path}")\n'
        f'  $HTTP["url"] =^ "{folder}" {{\n'
        f'    setenv.set-response-header = ("Content-Disposition" => '
        f'"attachment; filename=\\"{files.PARKS_FILENAME}\\"")\n'
        f'    mimetype.assign = ("" => "application/octet-stream")\n'
        "  }"
    )


def render() -> str:
    blocks = []
    for port in SITE_PORTS:
        body = [
            f'  server.document-root = "{site_root(port)}"',
            f'  accesslog.filename = "{access_log(port)}"',
        ]
        if port == MAPSERVER:
            body.append(_mapserver_block())
        if port == files.PARKS.port:
            body.append(_download_block())
        if port == STAC_CATALOG:
            body.append(stac.lighttpd_block())
        blocks.append(f'$SERVER["socket"] == "{HOST}:{port}" {{\n' + "\n".join(body) + "\n}")
    return Template((TEMPLATES / "lighttpd.conf").read_text()).substitute(
        first_port=SITE_PORTS[0], sites=SITES, logs=LOGS, sockets="\n\n".join(blocks)
    )


def write_config() -> None:
    CONFIG_FILE.parent.mkdir(parents=True, exist_ok=True)
    CONFIG_FILE.write_text(render())
