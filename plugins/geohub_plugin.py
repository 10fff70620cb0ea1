"""GeoHub in Airflow: the search API and page of what the harvest found, mounted in the API server at
/geohub, with a link in the UI's navigation. The app lives in the ``geohub`` package beside this file."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from geohub.app import create_app

URL_PREFIX = "/geohub"


class GeoHubPlugin(AirflowPlugin):
    name = "geohub"
    fastapi_apps = [{"app": create_app(), "url_prefix": URL_PREFIX, "name": "GeoHub"}]
    # Shown in the UI's navigation, the page embedded under /plugin/geohub (href is relative to the UI's base).
    external_views = [
        {
            "name": "GeoHub",
            "href": f"{URL_PREFIX.lstrip('/')}/",
            "url_route": "geohub",
            "nav_top_level": True,
        },
        # a tab on every DAG run's page: the run's report (GeoWeb's DAGs; a note for others)
        {
            "name": "GeoWeb report",
            "href": f"{URL_PREFIX.lstrip('/')}/runs/{{DAG_ID}}/{{RUN_ID}}",
            "destination": "dag_run",
            "url_route": "geoweb_report",
        },
    ]
