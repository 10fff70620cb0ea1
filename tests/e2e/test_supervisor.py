"""The process supervisor on what Airflow does: a Celery task runs in a process group of its own, so ending a
worker must end its tasks too, when it is killed as in a crash and when it is stopped."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from stack import supervisor
from stack.supervisor import Service

# a leader, and a child in a session of its own (as Airflow puts each task) that ignores SIGTERM
FAMILY = "setsid sh -c 'trap \"\" TERM; sleep 60; :' & sleep 60; :"


@pytest.fixture
def family(tmp_path) -> Service:
    service = Service("family", ("sh", "-c", FAMILY), run_dir=tmp_path / "run", log_dir=tmp_path / "logs")
    supervisor.launch(service)
    supervisor.wait_while(lambda: len(supervisor.family(supervisor.running_pid(service))) < 4, 5.0)
    yield service
    supervisor.kill(service)


def alive(pids: set[int]) -> set[int]:
    listed = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-p", ",".join(map(str, pids))], capture_output=True, text=True
    )
    return {
        int(pid) for pid, stat in (line.split() for line in listed.stdout.splitlines()) if "Z" not in stat
    }


def test_the_family_holds_descendants_in_other_sessions(family):
    leader = supervisor.running_pid(family)
    members = supervisor.family(leader)
    outsiders = [pid for pid in members if pid not in supervisor.group_members(leader)]
    assert len(members) == 4 and outsiders, members  # sh, sleep; setsid's sh and its sleep


def test_kill_ends_the_whole_family_at_once(family):
    members = supervisor.family(supervisor.running_pid(family))
    started = time.monotonic()
    assert supervisor.kill(family)
    assert time.monotonic() - started < 2
    assert alive(members) == set()
    assert not family.pid_file.exists()
    assert not supervisor.kill(family)


def test_stop_ends_the_descendants_the_leader_left_behind(family):
    members = supervisor.family(supervisor.running_pid(family))
    assert supervisor.stop(family)
    assert alive(members) == set()
    assert supervisor.state(family) == "stopped"


def test_a_service_exiting_at_once_is_reported_with_its_output(tmp_path):
    service = Service(
        "broken", (sys.executable, "-c", "raise SystemExit('no config')"), ("http://127.0.0.1:9/",),
        run_dir=tmp_path / "run", log_dir=tmp_path / "logs",
    )  # fmt: skip
    with pytest.raises(supervisor.StartError, match=r"broken exited; see .*broken\.out"):
        supervisor.start([service], timeout=10)
    assert "no config" in service.output.read_text()
    assert supervisor.running_pid(service) is None
