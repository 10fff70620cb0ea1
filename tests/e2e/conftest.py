"""The real stack for end-to-end tests: PostgreSQL with PostGIS, Redis, Airflow with the CeleryExecutor and
two Celery workers (``python -m stack``), and the local test web.

``stack`` starts each component that is not running and stops, at the end, only those it started; it yields
a REST client of the API server. ``testweb`` is the integration tests' fixture.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from stack import airflow, postgres, redis, workers
from stack.airflow_api import AirflowClient
from stack.layout import PG_BIN
from tests.integration.conftest import testweb  # noqa: F401  (the session fixture, shared)

COMPONENTS = (postgres, redis, airflow, workers)  # in start order


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
