"""The Scrapy reference crawl: the same job as the page path of ``geoweb crawl``, done the Scrapy way.

Every page goes through a LinkExtractor; links within the web are followed breadth-first to a depth of
``--max-level``, robots.txt obeyed, duplicates filtered; no items, no pipelines. Prints one JSON object:
pages crawled, seconds and Scrapy's request counters.

    python bench/scrapy_reference.py --seed http://127.0.0.1:18200/ --allow 127.0.0.1:18200 --concurrency 64
"""

from __future__ import annotations

import argparse
import json
import time

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class WebSpider(scrapy.Spider):
    name = "synthetic_web"

    def __init__(self, seeds: list[str], netlocs: list[str], **kwargs):
        super().__init__(**kwargs)
        self.start_urls = seeds
        # allow_domains compares the whole netloc, so host:port pins the crawl to the synthetic web
        self.link_extractor = LinkExtractor(allow_domains=netlocs)
        self.pages = 0

    async def start(self):
        # seeds go through the dupefilter too (Scrapy's default skips it), so a linked root is not fetched twice
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        self.pages += 1
        for link in self.link_extractor.extract_links(response):
            yield scrapy.Request(link.url, callback=self.parse)


def scrapy_settings(concurrency: int, per_host: int, max_level: int) -> dict:
    return {
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": per_host,
        "DEPTH_LIMIT": max_level,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "WARNING",
        # breadth-first, as the Scrapy FAQ configures it: otherwise a page first met deep in a depth-first
        # walk is cut by DEPTH_LIMIT and never revisited from a shallower link
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "TELNETCONSOLE_ENABLED": False,
    }


def crawl(seeds: list[str], netlocs: list[str], concurrency: int, per_host: int, max_level: int) -> dict:
    process = CrawlerProcess(settings=scrapy_settings(concurrency, per_host, max_level))
    crawler = process.create_crawler(WebSpider)
    started = time.perf_counter()
    process.crawl(crawler, seeds=seeds, netlocs=netlocs)
    process.start()
    seconds = time.perf_counter() - started
    stats = crawler.stats.get_stats()
    return {
        "pages": crawler.spider.pages,
        "seconds": round(seconds, 3),
        "requests": stats.get("downloader/request_count", 0),
        "robots_requests": stats.get("robotstxt/request_count", 0),
        "robots_forbidden": stats.get("robotstxt/forbidden", 0),
        "filtered_duplicates": stats.get("dupefilter/filtered", 0),
        "failures": stats.get("downloader/request_count", 0)
        - stats.get("downloader/response_status_count/200", 0),
        "finish_reason": stats.get("finish_reason"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seed", action="append", required=True)
    parser.add_argument("--allow", action="append", required=True, help="host:port the crawl may follow")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--max-level", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(crawl(args.seed, args.allow, args.concurrency, args.per_host, args.max_level)))


if __name__ == "__main__":
    main()
