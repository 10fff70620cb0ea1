"""What a tolerant reading of a sloppy capabilities document costs, against the strict reading of a sound one.

Builds a ~10 MB WMS 1.3.0 capabilities document from a real MapServer one (its layers repeated under
distinct names), the sound reference, and sloppy variants of it, one defect each, then all of them at once:

- ``no-request``: no Capability/Request section (OWSLib's reader fails: the tolerant reading ``describe``);
- ``inspire-prefixes``: INSPIRE extended capabilities, and an INSPIRE identifier in every layer, whose
  ``inspire_vs`` and ``inspire_common`` prefixes are never declared (one libxml2 error per use);
- ``latin-1``: accented titles and abstracts in every layer written as ISO-8859-1 under a UTF-8 declaration;
- ``decimal-commas``: every EX_GeographicBoundingBox written with decimal commas;
- ``truncated``: cut at 90 % of its length (a push parser reads up to the cut);
- ``all``: the five at once.

Each read of each variant runs in a fresh process (peaks of one never hide another's): the process imports
the library and reads the small original once (what a pool worker has done before its first document),
bounds its address space as a pool worker does (``validation_memory_bytes``), and times one
``read_capabilities``: wall and CPU time, peak RSS growth (the high-water mark, reset just before the read,
minus the resident size before it: what the read added at its peak, the parser's C memory included, which
tracemalloc would not see) and the process's peak address space, which the pool's bound limits. Median of
``--runs`` processes. Exits 1 when a sloppy variant takes more than ``--max-time`` times the sound reading's
time (wall or CPU), grows its peak RSS by more than ``--max-memory`` times the sound reading's growth, or
leaves the crawl's bounds (``validation_timeout``, ``validation_memory_bytes``).

    python -m bench.bench_lenient [--runs 5] [--megabytes 10] [--profile VARIANT]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "capabilities" / "mapserver_wms_130.xml"
URL = "http://example.org/ows"
MB = 1024 * 1024
CUT = 0.9

# The inner layers of the source document: the group repeated, between its root layer's box and its end.
_GROUP_START = '    <Layer queryable="0"'
_GROUP_END = "  </Layer>\n</Capability>"
_INSPIRE_EXTENDED = """  <inspire_vs:ExtendedCapabilities>
    <inspire_common:MetadataUrl>
      <inspire_common:URL>http://example.org/csw?request=GetRecordById&amp;id=regions</inspire_common:URL>
      <inspire_common:MediaType>application/vnd.ogc.csw.GetRecordByIdResponse_xml</inspire_common:MediaType>
    </inspire_common:MetadataUrl>
    <inspire_common:SupportedLanguages>
      <inspire_common:DefaultLanguage><inspire_common:Language>eng</inspire_common:Language></inspire_common:DefaultLanguage>
    </inspire_common:SupportedLanguages>
    <inspire_common:ResponseLanguage><inspire_common:Language>eng</inspire_common:Language></inspire_common:ResponseLanguage>
  </inspire_vs:ExtendedCapabilities>
"""


# --- the documents ----------------------------------------------------------------------------------------


def _parts() -> tuple[str, str, str]:
    """The source document as (head, layer group, tail)."""
    text = SOURCE.read_text("utf-8")
    start, end = text.index(_GROUP_START), text.index(_GROUP_END)
    return text[:start], text[start:end], text[end:]


def _copy(group: str, n: int) -> str:
    """Copy ``n`` of the layer group, each layer's name (and the name in its metadata URL) its own."""
    group = re.sub(r"<Name>(\w+)</Name>", rf"<Name>\1_{n:05d}</Name>", group)
    return re.sub(r"layer=(\w+)", rf"layer=\1_{n:05d}", group)


def _no_request(text: str) -> str:
    return re.sub(r"  <Request>.*?</Request>\n", "", text, count=1, flags=re.S)


def _inspire_prefixes(text: str) -> str:
    text = text.replace("  <Exception>", _INSPIRE_EXTENDED + "  <Exception>", 1)
    return re.sub(
        r"(<Name>(\w+)</Name>)",
        r"\1<inspire_common:SpatialDataSetIdentifier><inspire_common:Code>\2</inspire_common:Code>"
        r"</inspire_common:SpatialDataSetIdentifier>",
        text,
    )


def _accented(text: str) -> str:
    return text.replace("Regions of the test web", "Régions du réseau d'essai, côté données")


def _decimal_commas(text: str) -> str:
    return re.sub(
        r"<EX_GeographicBoundingBox>.*?</EX_GeographicBoundingBox>",
        lambda box: re.sub(r"(\d)\.(\d)", r"\1,\2", box.group()),
        text,
        flags=re.S,
    )


# name: (edits of the text, encoding, cut at CUT of its length)
VARIANTS: dict[str, tuple[tuple[Callable[[str], str], ...], str, bool]] = {
    "sound": ((), "utf-8", False),
    "no-request": ((_no_request,), "utf-8", False),
    "inspire-prefixes": ((_inspire_prefixes,), "utf-8", False),
    "latin-1": ((_accented,), "latin-1", False),
    "decimal-commas": ((_decimal_commas,), "utf-8", False),
    "truncated": ((), "utf-8", True),
    "all": ((_no_request, _inspire_prefixes, _accented, _decimal_commas), "latin-1", True),
}


def documents(megabytes: float) -> dict[str, tuple[bytes, int]]:
    """Every variant's body and the layers it holds: each as many copies of the layer group as bring it
    to ``megabytes`` (a truncated one is cut from a document of that size)."""
    head, group, tail = _parts()
    found = {}
    for name, (edits, encoding, cut) in VARIANTS.items():

        def body(copies: int, edits=edits, encoding=encoding) -> bytes:
            text = head + "".join(_copy(group, n) for n in range(copies)) + tail
            for edit in edits:
                text = edit(text)
            return text.encode(encoding)

        fixed, per_copy = len(body(0)), len(body(1)) - len(body(0))
        copies = max(1, round((megabytes * MB - fixed) / per_copy))
        whole = body(copies)
        found[name] = (whole[: int(len(whole) * CUT)] if cut else whole, copies * group.count("<Name>"))
    return found


# --- one read, in a process of its own ----------------------------------------------------------------------


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (its values are in kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> bool:
    """Reset the process's RSS high-water mark (Linux 4.0 on); False where it cannot be."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def read_once(path: str, memory_bytes: int) -> dict:
    """One ``read_capabilities`` of the document at ``path``, measured, in this (fresh) process."""
    from geoweb.detect.ogc import read_capabilities
    from geoweb.errors import GeowebError

    read_capabilities(SOURCE.read_bytes(), URL)  # a pool worker has read documents before
    body = Path(path).read_bytes()
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    rss_before = _status("VmRSS")
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    reset = _reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        found = read_capabilities(body, URL)
    except (GeowebError, MemoryError) as exc:
        found, error = None, " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
    else:
        error = None
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if reset:
        peak_growth = _status("VmHWM") - rss_before
    else:  # the high-water mark of the whole process: a growth only once the read passes earlier peaks
        peak_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - maxrss_before
    return {
        "wall": wall,
        "cpu": cpu,
        "peak_growth": max(0, peak_growth),
        "peak_address_space": _status("VmPeak"),
        "hwm_reset": reset,
        "level": None if found is None else found.conformance.value,
        "datasets": None if found is None else len(found.datasets),
        "defects": [] if found is None else found.defects,
        "owslib_error": None if found is None else found.owslib_error,
        "error": error,
    }


def measure(path: Path, runs: int, memory_bytes: int) -> dict:
    """The median of ``runs`` reads of ``path``, each in a new process."""
    reads = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_lenient", "--read", str(path), "--memory", str(memory_bytes)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        reads.append(json.loads(done.stdout.splitlines()[-1]))
    row = dict(reads[-1])
    for key in ("wall", "cpu", "peak_growth", "peak_address_space"):
        row[key] = statistics.median(r[key] for r in reads)
    row["wall_max"] = max(r["wall"] for r in reads)
    return row


def profile(body: bytes, top: int = 20) -> None:
    """cProfile of one read in this process, the ``top`` functions by cumulative time."""
    from geoweb.detect.ogc import read_capabilities

    read_capabilities(SOURCE.read_bytes(), URL)
    profiler = cProfile.Profile()
    profiler.runcall(read_capabilities, body, URL)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


# --- the report -------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per variant (default 5)")
    parser.add_argument("--megabytes", type=float, default=10.0, help="size of the sound document")
    parser.add_argument("--max-time", type=float, default=3.0, help="bound on time / sound time")
    parser.add_argument("--max-memory", type=float, default=2.0, help="bound on peak growth / sound's")
    parser.add_argument("--profile", choices=VARIANTS, help="cProfile one read of a variant, in-process")
    parser.add_argument("--read", help=argparse.SUPPRESS)  # the measuring child
    parser.add_argument("--memory", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        print(json.dumps(read_once(args.read, args.memory)))
        return 0

    from geoweb.settings import Settings

    settings = Settings()
    bodies = documents(args.megabytes)
    if args.profile:
        profile(bodies[args.profile][0])
        return 0
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-lenient-") as folder:
        for name, (body, layers) in bodies.items():
            path = Path(folder) / f"{name}.xml"
            path.write_bytes(body)
            rows[name] = measure(path, args.runs, settings.validation_memory_bytes)
            rows[name].update(mb=len(body) / MB, layers=layers)

    sound, failures = rows["sound"], []
    print(f"{'variant':<17} {'MB':>5} {'layers':>6} {'level':<11} {'sets':>5} {'wall s':>7} {'x':>5} {'CPU s':>6} {'x':>5} "
          f"{'peak +MB':>8} {'x':>5} {'VmPeak MB':>9}")  # fmt: skip
    for name, r in rows.items():
        if r["error"]:
            failures.append(f"{name}: {r['error']}")
            print(f"{name:<17} {r['mb']:>5.2f} {r['layers']:>6} {r['error'][:150]!r}")
            continue
        times = (r["wall"] / sound["wall"], r["cpu"] / sound["cpu"])
        memory = r["peak_growth"] / sound["peak_growth"]
        print(f"{name:<17} {r['mb']:>5.2f} {r['layers']:>6} {r['level']:<11} {r['datasets']:>5} {r['wall']:>7.2f} "
              f"{times[0]:>5.2f} {r['cpu']:>6.2f} {times[1]:>5.2f} {r['peak_growth'] / MB:>8.1f} "
              f"{memory:>5.2f} {r['peak_address_space'] / MB:>9.0f}")  # fmt: skip
        if name != "sound" and max(times) > args.max_time:
            failures.append(f"{name}: {max(times):.2f}x the sound reading's time (bound {args.max_time}x)")
        if name != "sound" and memory > args.max_memory:
            failures.append(f"{name}: {memory:.2f}x the sound reading's peak (bound {args.max_memory}x)")
        if r["wall_max"] > settings.validation_timeout:
            failures.append(f"{name}: {r['wall_max']:.2f} s, over validation_timeout")
    print()
    for name, r in rows.items():
        owslib = " (OWSLib failed: tolerant reading)" if r["owslib_error"] else ""
        print(f"{name}: {len(r['defects'])} defects{owslib}: {'; '.join(r['defects'])[:300]}")
    wall = max(r["wall_max"] for r in rows.values())
    address = max(r["peak_address_space"] for r in rows.values())
    print(f"\nslowest read {wall:.2f} s of validation_timeout {settings.validation_timeout:g} s "
          f"({settings.validation_timeout / wall:.1f}x margin); largest address space {address / MB:.0f} MB of "
          f"validation_memory_bytes {settings.validation_memory_bytes / MB:.0f} MB "
          f"({settings.validation_memory_bytes / address:.1f}x margin)")  # fmt: skip
    if not sound["hwm_reset"]:
        print("peak RSS growth from ru_maxrss (the high-water mark could not be reset)")
    for failure in failures:
        print("OVER BOUND:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
