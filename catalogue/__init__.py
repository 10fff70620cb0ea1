"""The harvest catalogue: pycsw (CSW 2.0.2) and pygeoapi (OGC API - Records) over the view ``pycsw_records``
of the harvest database, in one WSGI process of their own (``catalogue.wsgi``) that GeoHub forwards
``/geohub/csw`` and ``/geohub/records`` to (plugins/geohub/catalogue.py). It runs in ``.venv-catalogue``:
pycsw 2.6 needs SQLAlchemy 1.x, Airflow 2.x. Its settings are environment variables (docs/catalogue.md)."""
