"""python -m stack start|stop|status [COMPONENT ...]"""

from __future__ import annotations

import argparse
import sys

from stack import postgres, redis

COMPONENTS = {"postgres": postgres, "redis": redis}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stack", description=__doc__)
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("components", nargs="*", choices=[[], *COMPONENTS], help="default: all")
    args = parser.parse_args(argv)
    names = args.components or list(COMPONENTS)
    if args.action == "stop":
        names.reverse()
    for name in names:
        component = COMPONENTS[name]
        if args.action == "start":
            component.start()
        elif args.action == "stop":
            component.stop()
        print(component.status())
    return 0


if __name__ == "__main__":
    sys.exit(main())
