"""The URL Bloom filter at its default setting: memory per URL, measured false-positive rate, throughput.

Inserts n realistic URLs, then queries n other distinct URLs (every hit is a false positive) and the n
inserted ones (every miss would be a false negative). URLs are made in chunks outside the timed loops; a
Python set of the same URLs is measured for scale.

    .venv/bin/python bench/bench_bloom.py                 # n = 1,000,000 at the default error rate
    .venv/bin/python bench/bench_bloom.py --n 100000 --error-rate 1e-3
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterator

from geoweb.dedup import BloomFilter
from geoweb.settings import Settings

CHUNK = 100_000
_WORDS = (
    "river basin landuse soil geology parcel road census climate rainfall flood habitat coast orthophoto "
    "elevation cadastre transport noise air water energy boundary forest wetland protected zoning"
).split()
_TLDS = ("gov", "org", "eu", "de", "fr", "nl", "gov.uk", "edu", "int", "go.jp", "gov.au", "ca")


def url_for(rng: random.Random, uid: int) -> str:
    """A realistic URL embedding ``uid`` where it cannot run into other text: distinct ids, distinct URLs."""
    host = f"{rng.choice(('www', 'maps', 'geo', 'data', 'gis'))}.{rng.choice(_WORDS)}{rng.randrange(2000)}"
    host += f".{rng.choice(_TLDS)}"
    word, other = rng.choice(_WORDS), rng.choice(_WORDS)
    template = uid % 5
    if template == 0:
        return f"https://{host}/{word}/{other}-dataset-{uid}.html"
    if template == 1:
        return f"http://{host}/geoserver/{word}/wms?service=WMS&request=GetCapabilities&layer={other}_{uid}"
    if template == 2:
        return f"https://{host}/catalogue/record/{uid:012x}-{word}"
    if template == 3:
        return f"https://{host}/download/{word}/{other}_{uid}.zip"
    return f"https://{host}/search?q={word}+{other}&page={uid}#results"


def url_chunks(first_id: int, n: int, seed: int) -> Iterator[list[str]]:
    rng = random.Random(seed)
    for start in range(first_id, first_id + n, CHUNK):
        yield [url_for(rng, uid) for uid in range(start, min(first_id + n, start + CHUNK))]


def timed(op, chunks: Iterator[list[str]]) -> tuple[int, float]:
    """Applies ``op`` to every URL; returns how many calls were true and the seconds spent in the calls."""
    true, seconds = 0, 0.0
    for chunk in chunks:
        started = time.perf_counter()
        true += sum(map(op, chunk))
        seconds += time.perf_counter() - started
    return true, seconds


def set_bytes(n: int, seed: int) -> int:
    """Memory of a Python set holding the same n URLs: the table plus the strings."""
    urls = set()
    strings = 0
    for chunk in url_chunks(0, n, seed):
        urls.update(chunk)
        strings += sum(map(sys.getsizeof, chunk))
    return sys.getsizeof(urls) + strings


def main() -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=settings.expected_urls)
    parser.add_argument("--error-rate", type=float, default=settings.bloom_error_rate)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n = args.n
    bloom = BloomFilter(n, args.error_rate)
    added, insert_s = timed(bloom.add, url_chunks(0, n, args.seed))
    false_pos, lookup_s = timed(bloom.__contains__, url_chunks(n, n, args.seed + 1))
    present, _ = timed(bloom.__contains__, url_chunks(0, n, args.seed))
    bloom_bytes = bloom.num_bits // 8
    rows = [
        f"n = {n:,} URLs inserted, {n:,} other URLs queried; target error rate {args.error_rate:g}; "
        f"Python {sys.version.split()[0]}.",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| bit array | {bloom.num_bits:,} bits = {bloom_bytes / 2**20:.2f} MiB, k = {bloom.num_hashes} |",
        f"| memory per URL | {bloom_bytes / n:.2f} bytes ({8 * bloom_bytes / n:.1f} bits) |",
        f"| Python set of the same URLs, per URL | {set_bytes(n, args.seed) / n:.0f} bytes |",
        f"| false positives on insert (add said 'seen') | {n - added:,} |",
        f"| false positives on {n:,} new URLs | {false_pos:,} = {false_pos / n:.2e} |",
        f"| theoretical rate at n | {bloom.expected_error_rate(n):.2e} |",
        f"| false negatives | {n - present:,} |",
        f"| insert (add) | {n / insert_s:,.0f} URLs/s ({1e6 * insert_s / n:.2f} µs each) |",
        f"| lookup (in) | {n / lookup_s:,.0f} URLs/s ({1e6 * lookup_s / n:.2f} µs each) |",
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
