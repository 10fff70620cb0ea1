"""The real stack for end-to-end tests: PostgreSQL with PostGIS, Redis, the catalogue, Airflow with the
CeleryExecutor and two Celery workers (``python -m stack``), and the local test web.

``stack`` starts each component that is not running and stops, at the end, only those it started; it yields
a REST client of the API server. ``testweb`` is the integration tests' fixture.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from stack import airflow, catalogue, postgres, redis, workers
from stack.airflow_api import ADMIN, AirflowClient, admin_password
from stack.layout import API_URL, PG_BIN
from tests.e2e.airflow_ui import AirflowUI
from tests.geohub.browser import BINARY, Chromium
from tests.integration.conftest import testweb  # noqa: F401  (the session fixture, shared)

COMPONENTS = (postgres, redis, catalogue, airflow, workers)  # in start order


@pytest.fixture(scope="session")
def stack() -> Iterator[AirflowClient]:
    missing = [b for b in ("redis-server",) if shutil.which(b) is None]
    missing += [str(PG_BIN / "postgres")] if not (PG_BIN / "postgres").exists() else []
    if missing:
        pytest.skip(f"the stack is not installed (missing {', '.join(missing)}): run scripts/setup.sh")
    started = [component for component in COMPONENTS if not component.running()]
    try:
        for component in started:
            component.start()
        yield AirflowClient.from_environment()
    finally:
        for component in reversed(started):
            component.stop()


@pytest.fixture(scope="session")
def logged_in(stack, tmp_path_factory) -> Iterator[AirflowUI]:
    """The stack's Airflow UI in headless Chromium, logged in as the admin: one browser for the session."""
    if BINARY is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    browser = Chromium(tmp_path_factory.mktemp("chromium"), width=1400, height=1100)
    try:
        airflow_ui = AirflowUI(browser, API_URL)
        airflow_ui.log_in(ADMIN, admin_password())
        yield airflow_ui
    finally:
        browser.close()


@pytest.fixture
def ui(logged_in) -> Iterator[AirflowUI]:
    """The logged-in UI; afterwards the browser leaves the UI, whose pages keep polling the API server."""
    yield logged_in
    logged_in.browser.navigate("about:blank")
