"""Web-search providers for seeding: the Google Custom Search JSON API, the Brave Search API and SearXNG.

Each turns a keyword into result pages; every hit is a Record whose URL is a seed page for the crawl.
"""
