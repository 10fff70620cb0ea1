"""Long-running processes with pid files: start, check, stop (the stack's Airflow and the test web's servers).

Each process runs in its own session (process group), so stopping it also ends what it spawned (uvicorn and
Celery pool processes, gunicorn workers, FastCGI children). Its pid file holds the group leader's pid.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from stack.layout import REPO

START_TIMEOUT = 45.0
STOP_TIMEOUT = 5.0
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: never via a proxy


class StartError(RuntimeError):
    """Raised when a process cannot be started or does not answer in time."""


@dataclass(frozen=True)
class Service:
    """A process to keep running: its command, and the URLs that answer 200 once it is up (none: running)."""

    name: str
    command: tuple[str, ...]
    checks: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)  # added to the caller's environment
    _: KW_ONLY
    run_dir: Path  # pid file
    log_dir: Path  # <name>.out: its standard output and error
    stop_timeout: float = STOP_TIMEOUT  # between SIGTERM and SIGKILL

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def output(self) -> Path:
        return self.log_dir / f"{self.name}.out"

    @property
    def ports(self) -> list[int]:
        return sorted({int(url.split(":")[2].split("/")[0]) for url in self.checks})


def answers(url: str, timeout: float = 3.0) -> bool:
    try:
        with DIRECT.open(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _processes() -> dict[int, tuple[int, int]]:
    """Every live process: pid -> (parent pid, process group). Zombies do not count: init may reap late."""
    processes = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, ppid, pgrp = stat.read_text().rpartition(")")[2].split()[:3]
        except OSError:  # the process ended while we looked
            continue
        if state != "Z":
            processes[int(stat.parent.name)] = (int(ppid), int(pgrp))
    return processes


def group_members(group: int) -> list[int]:
    """Pids of the group's running processes."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(group, os.WNOHANG)  # our own child, when this process started it
    return [pid for pid, (_, pgrp) in _processes().items() if pgrp == group]


def family(group: int) -> set[int]:
    """The group's processes and their descendants, also those that made a group of their own (Airflow puts
    each task in one)."""
    processes = _processes()
    members = {pid for pid, (_, pgrp) in processes.items() if pgrp == group}
    while grown := {pid for pid, (ppid, _) in processes.items() if ppid in members} - members:
        members |= grown
    return members


def wait_while(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while condition() and time.monotonic() < deadline:
        time.sleep(step)


def running_pid(service: Service) -> int | None:
    """The pid of our running process, from its pid file; None (and no stale file) when it is gone."""
    try:
        pid = int(service.pid_file.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if not group_members(pid):
        service.pid_file.unlink(missing_ok=True)
        return None
    return pid


def is_up(service: Service) -> bool:
    return running_pid(service) is not None and all(answers(url) for url in service.checks)


def state(service: Service) -> str:
    """'up', 'not answering' or 'stopped'."""
    if running_pid(service) is None:
        return "stopped"
    return "up" if is_up(service) else "not answering"


def _connectable(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def launch(service: Service) -> None:
    taken = [p for p in service.ports if _connectable(p)]
    if taken:
        raise StartError(f"{service.name}: port {taken} is already in use by another program")
    service.run_dir.mkdir(parents=True, exist_ok=True)
    service.log_dir.mkdir(parents=True, exist_ok=True)
    with service.output.open("ab") as out:
        process = subprocess.Popen(
            service.command,
            cwd=REPO,
            env=os.environ | dict(service.env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    service.pid_file.write_text(str(process.pid))


def wait_until_up(services: list[Service], timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    pending = list(services)
    while pending:
        pending = [s for s in pending if not is_up(s)]
        for service in pending:
            if running_pid(service) is None:
                raise StartError(f"{service.name} exited; see {service.output}")
        if pending and time.monotonic() > deadline:
            names = ", ".join(s.name for s in pending)
            raise StartError(
                f"not answering after {timeout:.0f} s: {names}; see their logs in {pending[0].log_dir}"
            )
        time.sleep(0.2)


def start(services: tuple[Service, ...] | list[Service], timeout: float = START_TIMEOUT) -> list[Service]:
    """Starts every service not already up and waits for them; returns those it started.

    On failure it stops what it started and raises StartError."""
    started = []
    try:
        for service in services:
            if is_up(service):
                continue
            stop(service)  # a process that runs but does not answer
            launch(service)
            started.append(service)
        wait_until_up(started, timeout)
    except StartError:
        for service in started:
            stop(service)
        raise
    return started


def _kill_family(group: int, service: Service, known: frozenset[int] = frozenset()) -> None:
    """SIGKILLs the group, its descendants, and the ``known`` ones that were (orphans are re-parented)."""
    doomed = known | family(group)
    for member in doomed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)
    wait_while(lambda: bool(doomed & _processes().keys()), 5.0)
    service.pid_file.unlink(missing_ok=True)


def kill(service: Service) -> bool:
    """Ends the process group and its descendants at once with SIGKILL, as a crash would; True if it ran."""
    pid = running_pid(service)
    if pid is None:
        return False
    _kill_family(pid, service)
    return True


def stop(service: Service) -> bool:
    """Ends the process, then whatever it spawned and left behind; True if it was running."""
    pid = running_pid(service)
    if pid is None:
        return False
    members = frozenset(family(pid))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    # the leader's exit ends the wait; what outlives SIGTERM (idle FastCGI processes, tasks) gets SIGKILL
    wait_while(lambda: pid in group_members(pid), service.stop_timeout)
    _kill_family(pid, service, members)
    return True
