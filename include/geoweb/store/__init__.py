"""The PostGIS store of harvest runs: a schema it migrates itself, idempotent bulk loads, the crawl frontier,
and the export of a run as ``geoweb crawl`` JSON lines. The database comes from one setting, ``GEOWEB_DB``."""

from geoweb.errors import MigrationError, StoreError
from geoweb.store.frontier import shard_of
from geoweb.store.store import Store

__all__ = ["MigrationError", "Store", "StoreError", "shard_of"]
