"""The REST client against the real API server: each refusal is an AirflowError carrying the server's own
explanation and its HTTP status, and the password never appears in one."""

from __future__ import annotations

import json
import socket

import pytest

from stack import airflow_api
from stack.airflow import MAIN_DAG
from stack.airflow_api import ADMIN, AirflowClient, AirflowError, admin_password
from stack.layout import API_URL


def test_a_wrong_password_is_refused_without_showing_it(stack):
    client = AirflowClient(API_URL, ADMIN, "not-the-password-42")
    with pytest.raises(AirflowError, match=r"/auth/token: HTTP 401: Invalid credentials") as refused:
        client.dag(MAIN_DAG)
    assert refused.value.status == 401
    assert "not-the-password-42" not in str(refused.value)


def test_an_api_that_does_not_answer_is_named(stack):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the client calls it
    with pytest.raises(AirflowError, match=rf"POST /auth/token: .*127\.0\.0\.1.*{port}.*refused") as refused:
        AirflowClient(f"http://127.0.0.1:{port}", ADMIN, "secret-pass-77").dag(MAIN_DAG)
    assert refused.value.status is None
    assert "secret-pass-77" not in str(refused.value)


def test_an_unknown_dag_is_a_404_with_the_servers_words(stack):
    with pytest.raises(AirflowError, match=r"HTTP 404: Dag with dag_id: 'no_such_dag' not found"):
        stack.trigger("no_such_dag", {})
    assert stack.dag("no_such_dag") is None


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        (
            {"seeds": ["http://127.0.0.1:1/"], "max_level": 99},
            "param max_level: 99 is greater than the maximum",
        ),
        (
            {"seeds": "http://127.0.0.1:1/"},
            "param seeds: 'http://127.0.0.1:1/' is not of type 'null', 'array'",
        ),
        ({"seeds": ["javascript:alert(1)"]}, "param seeds"),
    ],
)
def test_a_bad_conf_is_refused_before_any_run_starts(stack, conf, message):
    runs_before = stack.request("GET", f"/dags/{MAIN_DAG}/dagRuns", params={"limit": 1})["total_entries"]
    with pytest.raises(AirflowError, match=r"HTTP 400: Invalid input for ") as refused:
        stack.trigger(MAIN_DAG, conf)
    assert message in str(refused.value)
    assert (
        stack.request("GET", f"/dags/{MAIN_DAG}/dagRuns", params={"limit": 1})["total_entries"] == runs_before
    )


def test_the_main_dag_is_parsed_without_import_errors(stack):
    assert stack.dag(MAIN_DAG)["dag_id"] == MAIN_DAG
    assert [e for e in stack.import_errors() if e["filename"].endswith(f"{MAIN_DAG}.py")] == []


def test_the_crawl_pool_exists(stack):
    pool = stack.request("GET", "/pools/geoweb_crawl")
    assert pool["slots"] == 8


@pytest.mark.parametrize("content", ["", "not json", json.dumps({"someone": "else"})])
def test_a_broken_password_file_is_a_clear_error(tmp_path, monkeypatch, content):
    broken = tmp_path / "passwords.json"
    broken.write_text(content)
    monkeypatch.setattr(airflow_api, "PASSWORDS_FILE", broken)
    monkeypatch.delenv("AIRFLOW_ADMIN_PASSWORD", raising=False)
    with pytest.raises(
        AirflowError, match="no password for admin: set AIRFLOW_ADMIN_PASSWORD or start the stack"
    ):
        admin_password()


def test_the_environment_password_wins(monkeypatch):
    monkeypatch.setenv("AIRFLOW_ADMIN_PASSWORD", "from-the-environment")
    assert admin_password() == "from-the-environment"
