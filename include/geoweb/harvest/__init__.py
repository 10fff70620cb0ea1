"""Harvest runs: the parameters of a run (``params``) and the steps the crawl DAG runs (``run``).

Kept free of imports here: the DAG file imports ``geoweb.harvest.params`` when it is parsed, and that must
not pull in the crawler or the database driver.
"""
