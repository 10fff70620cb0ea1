"""``geoweb`` without GEOWEB_DB: the local stack's database when the stack runs (said on stderr, without the
password), else the error that names GEOWEB_DB."""

from __future__ import annotations

import pytest

from geoweb import cli, local_stack

# nothing listens on port 1: the command gets as far as connecting, and fails at once
STACK_DSN = "postgresql://geoweb:stack-secret@127.0.0.1:1/geoweb"


@pytest.fixture
def clone(tmp_path, monkeypatch):
    """A clone whose stack is down; the test writes the DSN file to bring it up."""
    monkeypatch.setattr(local_stack, "CLONE", tmp_path)
    monkeypatch.delenv("GEOWEB_DB", raising=False)
    return tmp_path


def stack_up(clone) -> None:
    (clone / local_stack.DSN_FILE).parent.mkdir(parents=True)
    (clone / local_stack.DSN_FILE).write_text(f"{STACK_DSN}\n")


def test_the_stack_dsn_is_read_from_the_clone_while_the_stack_runs(clone):
    assert local_stack.stack_dsn() is None
    stack_up(clone)
    assert local_stack.stack_dsn() == STACK_DSN


def test_a_printed_dsn_has_no_password():
    assert local_stack.without_password(STACK_DSN) == "postgresql://geoweb@127.0.0.1:1/geoweb"
    assert local_stack.without_password("postgresql://127.0.0.1/geoweb") == "postgresql://127.0.0.1/geoweb"
    assert local_stack.without_password("host=db dbname=geoweb") == "host=db dbname=geoweb"


@pytest.mark.parametrize("argv", [["export", "--run", "latest"], ["migrate"], ["revisit"]])
def test_without_geoweb_db_the_command_uses_the_running_stack_and_says_so(clone, capsys, argv):
    stack_up(clone)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert (
        "geoweb: GEOWEB_DB is not set; using the local stack's database at "
        "postgresql://geoweb@127.0.0.1:1/geoweb\n"
    ) in err
    assert "cannot connect to the harvest database" in err and "stack-secret" not in err


def test_geoweb_db_wins_over_the_stack(clone, capsys, monkeypatch):
    stack_up(clone)
    monkeypatch.setenv("GEOWEB_DB", "postgresql://geoweb:other@127.0.0.1:2/geoweb")
    assert cli.main(["migrate"]) == 1
    err = capsys.readouterr().err
    assert "local stack" not in err and "port 2 failed" in err


def test_without_geoweb_db_or_a_running_stack_the_error_names_geoweb_db(clone, capsys):
    assert cli.main(["export", "--run", "latest"]) == 1
    assert capsys.readouterr().err == (
        "geoweb export: GEOWEB_DB is not set: set it to the PostGIS database, "
        "postgresql://USER:PASSWORD@HOST:PORT/DB\n"
    )
