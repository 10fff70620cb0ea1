"""python -m stack start|stop|status [COMPONENT ...]: start or stop the local stack, or show it (exit 1 when
something asked about is down)."""

from __future__ import annotations

import argparse
import sys
import time

from stack import airflow, catalogue, postgres, redis, workers

COMPONENTS = {
    "postgres": postgres, "redis": redis, "catalogue": catalogue, "airflow": airflow, "workers": workers
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stack", description=__doc__)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument(
        "components", nargs="*", metavar="COMPONENT", help=f"{', '.join(COMPONENTS)} (default: all)"
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.components if name not in COMPONENTS]
    if unknown:
        parser.error(f"unknown component(s) {', '.join(unknown)}; known: {', '.join(COMPONENTS)}")
    names = args.components or list(COMPONENTS)
    if args.action == "stop":
        names.reverse()
    for name in names:
        component = COMPONENTS[name]
        began = time.monotonic()
        try:
            if args.action == "start":
                component.start()
            elif args.action == "stop":
                component.stop()
        except RuntimeError as exc:  # StartError and the like: the message says what failed and where to look
            print(f"error: {name}: {exc}", file=sys.stderr)
            return 1
        took = f" ({time.monotonic() - began:.1f} s)" if args.action != "status" else ""
        print(component.status() + took)
    if args.action == "status":  # 0 when everything asked about is up, as scripts expect
        return 0 if all(COMPONENTS[name].running() for name in names) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
