"""The PostGIS store of harvest runs: a schema it migrates itself (``migrate_database``), and one repository
per group of tables over one connection (``Store.runs``, ``frontier``, ``resources``, ``catalogue``,
``revisits``), each write an idempotent bulk load. The database comes from one setting, ``GEOWEB_DB``."""

from geoweb.errors import MigrationError, StoreError
from geoweb.store.frontier import shard_of
from geoweb.store.store import Store, migrate_database

__all__ = ["MigrationError", "Store", "StoreError", "migrate_database", "shard_of"]
