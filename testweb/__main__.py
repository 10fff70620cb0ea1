"""python -m testweb build|start|stop|status|capture (run from the repository root)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from testweb import servers
from testweb.layout import CORPUS, LOGS, MANIFEST


def cmd_build() -> int:
    from testweb.build import build  # geopandas and GDAL: only building needs them

    if servers.stop_all():
        print("stopped the running test web first")
    started = time.monotonic()
    manifest = build()
    if not CORPUS.is_dir():
        print(f"warning: {CORPUS} is absent: the catalogue holds only our own records", file=sys.stderr)
    print(
        f"built in {time.monotonic() - started:.1f} s: {len(manifest['resources'])} resources, manifest {MANIFEST}"
    )
    return 0


def cmd_start() -> int:
    from testweb.build import is_built

    if not is_built():
        cmd_build()
    started = time.monotonic()
    try:
        servers.start_all()
    except servers.StartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    manifest = json.loads(MANIFEST.read_text())
    print(f"test web up in {time.monotonic() - started:.1f} s; logs in {LOGS}; ground truth in {MANIFEST}")
    print("seeds:")
    for seed in manifest["seeds"]:
        print(f"  {seed}")
    return 0


def cmd_stop() -> int:
    stopped = servers.stop_all()
    print(f"stopped: {', '.join(stopped)}" if stopped else "nothing was running")
    return 0


def cmd_status() -> int:
    states = servers.status()
    for name, state in states.items():
        print(f"{name:10} {state}")
    return 0 if all(s == "up" for s in states.values()) else 1


def cmd_capture() -> int:
    from testweb.capture import capture

    was_up = all(s == "up" for s in servers.status().values())
    if not was_up and cmd_start():
        return 1
    try:
        for entry in capture():
            print(f"  {entry['file']}  {entry['type']} {entry['version']}")
    finally:
        if not was_up:
            cmd_stop()
    return 0


COMMANDS = {
    "build": cmd_build,
    "start": cmd_start,
    "stop": cmd_stop,
    "status": cmd_status,
    "capture": cmd_capture,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m testweb", description="The local GeoWeb of real OGC servers."
    )
    parser.add_argument("command", choices=COMMANDS)
    return COMMANDS[parser.parse_args(argv).command]()


if __name__ == "__main__":
    sys.exit(main())
