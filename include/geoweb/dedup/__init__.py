"""URL dedup: the paper's Bloom filter (a shared Redis form comes with the Airflow fan-out)."""

from geoweb.dedup.bloom import BloomFilter

__all__ = ["BloomFilter"]
