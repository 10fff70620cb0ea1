"""The local stack GeoWeb Harvester runs on: PostgreSQL with PostGIS, Redis, and Airflow with Celery workers.

``python -m stack start|stop|status [COMPONENT ...]`` from the repository root. Everything it creates lives
under ``var/stack/``; every component listens on loopback only.
"""
