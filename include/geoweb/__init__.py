"""GeoWeb Harvester: discover geospatial services and files on the web.

The library is importable and testable without Airflow; the DAGs in ``dags/`` only wire it together.
"""

__version__ = "0.1.0"
