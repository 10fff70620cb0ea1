"""pygeoapi (its Flask app) configured by PYGEOAPI_CONFIG; its OpenAPI document lies next to the configuration."""

import os
from pathlib import Path

config = Path(os.environ["PYGEOAPI_CONFIG"])
os.environ.setdefault("PYGEOAPI_OPENAPI", str(config.with_name("pygeoapi-openapi.yml")))

import pygeoapi.flask_app  # noqa: E402  (reads both variables when imported)

application = pygeoapi.flask_app.APP
