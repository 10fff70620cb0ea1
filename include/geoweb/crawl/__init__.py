"""The breadth-first crawl: levels of URLs fetched, classified by detectors, and their links followed."""

from geoweb.crawl.engine import Crawler
from geoweb.crawl.report import CrawlReport

__all__ = [
    "CrawlReport",
    "Crawler",
]
