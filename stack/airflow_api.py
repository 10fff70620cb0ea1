"""A small client of Airflow's REST API, used as the UI uses it: a token from /auth/token, then /api/v2.

The password is read from the environment (``AIRFLOW_ADMIN_PASSWORD``) or the file the local stack generated;
it is sent only to /auth/token and never logged or put in an error message.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import requests

from stack.layout import AIRFLOW_HOME, API_URL

ADMIN = "admin"
PASSWORDS_FILE = AIRFLOW_HOME / "simple_auth_manager_passwords.json.generated"  # read by SimpleAuthManager
TERMINAL_RUN_STATES = frozenset({"success", "failed"})
PAGE = 100  # the API's maximum page size


class AirflowError(RuntimeError):
    """An API call that failed; the message carries the server's own explanation, ``status`` its HTTP code."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def admin_password() -> str:
    """The password of ``admin``: AIRFLOW_ADMIN_PASSWORD, else the one the local stack generated."""
    if password := os.environ.get("AIRFLOW_ADMIN_PASSWORD"):
        return password
    try:
        return json.loads(PASSWORDS_FILE.read_text())[ADMIN]
    except (OSError, ValueError, KeyError) as exc:
        raise AirflowError(f"no password for {ADMIN}: set AIRFLOW_ADMIN_PASSWORD or start the stack") from exc


class AirflowClient:
    """Calls /api/v2 with a bearer token, fetched on first use and again when it expires."""

    def __init__(self, base_url: str, username: str, password: str, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/")
        self._credentials = {"username": username, "password": password}
        self.timeout = timeout
        self._session = requests.Session()
        self._session.trust_env = False  # no proxy between us and a loopback API
        self._token: str | None = None

    @classmethod
    def from_environment(cls) -> AirflowClient:
        """The client of ``AIRFLOW_API_URL`` (default: the local stack) as ``admin``."""
        return cls(os.environ.get("AIRFLOW_API_URL", API_URL), ADMIN, admin_password())

    def _fetch_token(self) -> str:
        try:
            response = self._session.post(
                f"{self.base_url}/auth/token", json=self._credentials, timeout=self.timeout
            )
        except requests.RequestException as exc:
            raise AirflowError(f"POST /auth/token: {exc}") from exc
        if response.status_code not in (200, 201):
            raise AirflowError(
                f"POST /auth/token: HTTP {response.status_code}: {_detail(response)}", response.status_code
            )
        return response.json()["access_token"]

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Calls ``/api/v2{path}`` and returns the decoded JSON (None for an empty body)."""
        url = f"{self.base_url}/api/v2{path}"
        for attempt in range(2):
            if self._token is None:
                self._token = self._fetch_token()
            headers = {"Authorization": f"Bearer {self._token}"}
            try:
                response = self._session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
            except requests.RequestException as exc:
                raise AirflowError(f"{method} {path}: {exc}") from exc
            if response.status_code == 401 and attempt == 0:
                self._token = None  # expired: log in again once
                continue
            if not response.ok:
                raise AirflowError(
                    f"{method} {path}: HTTP {response.status_code}: {_detail(response)}", response.status_code
                )
            return response.json() if response.content else None
        raise AssertionError("unreachable")

    def dag(self, dag_id: str) -> dict | None:
        """The DAG as the API describes it; None while it is not parsed (or does not exist)."""
        try:
            return self.request("GET", f"/dags/{dag_id}")
        except AirflowError as exc:
            if exc.status == 404:
                return None
            raise

    def import_errors(self) -> list[dict]:
        """The DAG files that failed to import: ``filename`` and ``stack_trace``."""
        return self.request("GET", "/importErrors", params={"limit": PAGE})["import_errors"]

    def unpause(self, dag_id: str) -> None:
        self.request("PATCH", f"/dags/{dag_id}", json={"is_paused": False})

    def pause(self, dag_id: str) -> None:
        self.request("PATCH", f"/dags/{dag_id}", json={"is_paused": True})

    def trigger(self, dag_id: str, conf: dict) -> str:
        """Starts a manual run now, as the UI's trigger button does; returns its run id."""
        run = self.request("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
        return run["dag_run_id"]

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.request("GET", f"/dags/{dag_id}/dagRuns/{run_id}")

    def wait(self, dag_id: str, run_id: str, timeout: float, poll: float = 2.0) -> str:
        """Waits until the run succeeds or fails and returns its state; AirflowError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while (state := self.run(dag_id, run_id)["state"]) not in TERMINAL_RUN_STATES:
            if time.monotonic() > deadline:
                raise AirflowError(f"run {run_id} of {dag_id} is still {state} after {timeout:.0f} s")
            time.sleep(poll)
        return state

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        """Every task instance of the run, mapped ones one per map index."""
        return list(self._pages(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", "task_instances"))

    def xcom(
        self, dag_id: str, run_id: str, task_id: str, map_index: int = -1, key: str = "return_value"
    ) -> Any:
        """The value a task instance pushed (its return value by default), decoded."""
        path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
        entry = self.request(
            "GET", path, params={"map_index": map_index, "deserialize": True, "stringify": False}
        )
        return entry["value"]

    def _pages(self, path: str, key: str) -> Iterator[dict]:
        offset = 0
        while True:
            page = self.request("GET", path, params={"limit": PAGE, "offset": offset})
            yield from page[key]
            offset += len(page[key])
            if not page[key] or offset >= page["total_entries"]:
                return

    def runs(self, dag_id: str) -> list[dict]:
        """Every run of the DAG, oldest first, with its ``run_type`` (manual, scheduled, backfill...)."""
        return list(self._pages(f"/dags/{dag_id}/dagRuns?order_by=run_after", "dag_runs"))

    def set_variable(self, key: str, value: Any, description: str = "") -> None:
        """Creates or replaces the Variable ``key`` with the JSON of ``value``."""
        self._put("/variables", key, {"key": key, "value": json.dumps(value), "description": description})

    def delete_variable(self, key: str) -> None:
        """Deletes the Variable ``key``, if it exists."""
        try:
            self.request("DELETE", f"/variables/{key}")
        except AirflowError as exc:
            if exc.status != 404:
                raise

    def ensure_pool(self, name: str, slots: int, description: str) -> None:
        """Creates the pool, or sets its slots and description when it exists."""
        self._put(
            "/pools",
            name,
            {"name": name, "slots": slots, "description": description, "include_deferred": False},
        )

    def _put(self, collection: str, name: str, body: dict) -> None:
        """Replaces the collection's entry ``name`` with ``body``, creating it when there is none."""
        try:
            self.request("PATCH", f"{collection}/{name}", json=body)
        except AirflowError as exc:
            if exc.status != 404:
                raise
            self.request("POST", collection, json=body)


def _detail(response: requests.Response) -> str:
    """The server's explanation: FastAPI's ``detail`` (text or a list of validation errors), else the body."""
    try:
        detail = response.json().get("detail", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    text = detail if isinstance(detail, str) else json.dumps(detail)
    return text[:500] or response.reason
