"""The local stack GeoWeb Harvester runs on: PostgreSQL with PostGIS, Redis, the catalogue (pycsw and
pygeoapi), and Airflow with Celery workers.

``python -m stack start|stop|status [postgres|redis|catalogue|airflow|workers]`` from the repository root;
``python -m stack.demo`` crawls the local test web through it. Everything it creates lives under
``var/stack/`` but PostgreSQL's cluster and log, which the ``postgres`` user must reach (``layout.PG_HOME``);
every component listens on loopback only.

``layout`` (paths, ports, DSNs), one module per component (``postgres``, ``redis``, ``catalogue``,
``airflow``, ``workers``), ``supervisor`` (processes with pid files and process groups, shared with the test
web), ``airflow_api`` (the REST client), ``demo``. docker/ is the same set-up as containers, for several machines.
"""
