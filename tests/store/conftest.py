"""Fixtures of the store tests: a Store on the shared test database (``postgis_dsn``), and names no other test
uses, since every test of the run shares that database and resources are global to it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from geoweb.store import Store


@pytest.fixture
def store(postgis_dsn) -> Iterator[Store]:
    with Store(postgis_dsn) as opened:
        yield opened


@pytest.fixture
def site() -> str:
    """An origin of this test's own."""
    return f"http://{uuid.uuid4().hex[:12]}.example"


@pytest.fixture
def run_id(store) -> str:
    """A run of this test's own, begun."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    store.runs.begin(name, {"seeds": ["http://seed.example/"]})
    return name
