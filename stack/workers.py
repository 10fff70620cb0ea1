"""The Celery workers of the CeleryExecutor: two on this machine, told apart by their Celery node names."""

from __future__ import annotations

import time

from celery import Celery

from stack import airflow, redis, supervisor
from stack.layout import CELERY_BROKER_URL, LOGS, RUN
from stack.supervisor import Service, StartError

NAMES = ("worker1", "worker2")
READY_TIMEOUT = 90.0


def worker_service(name: str) -> Service:
    # the node name is name@host; task logs are on the shared disk, so the worker serves none
    command = (str(airflow.AIRFLOW_BIN), "celery", "worker", "--celery-hostname", f"{name}@%h",
               "--skip-serve-logs")  # fmt: skip
    return Service(name, command, (), airflow.environment(), run_dir=RUN, log_dir=LOGS, stop_timeout=15)


SERVICES = tuple(worker_service(name) for name in NAMES)
BY_NAME = {s.name: s for s in SERVICES}


def broker() -> Celery:
    """A Celery client of the stack's broker, to ask the workers themselves (over their control channel)."""
    return Celery(broker=CELERY_BROKER_URL)


def answering(timeout: float = 1.0) -> dict[str, dict]:
    """Worker name -> its Celery statistics (``total``: tasks run per task name), for workers that answer."""
    if not redis.running():  # no broker: nobody can answer (and Celery would retry connecting for minutes)
        return {}
    # replies are awaited until all workers answered or the timeout passed
    replies = broker().control.inspect(timeout=timeout, limit=len(NAMES)).stats() or {}
    return {node.split("@", 1)[0]: stats for node, stats in replies.items()}


def active(name: str, timeout: float = 1.0) -> list[dict]:
    """The Celery tasks the worker is executing now (each with ``args``: the Airflow workload)."""
    replies = broker().control.inspect(timeout=timeout).active() or {}
    return next((tasks for node, tasks in replies.items() if node.split("@", 1)[0] == name), [])


def _wait_until_answering(names: list[str], timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while missing := set(names) - set(answering()):
        for name in missing:
            if supervisor.running_pid(BY_NAME[name]) is None:
                raise StartError(f"{name} exited; see {BY_NAME[name].output}")
        if time.monotonic() > deadline:
            raise StartError(f"workers not answering after {timeout:.0f} s: {', '.join(sorted(missing))}")
        time.sleep(0.2)


def running() -> bool:
    """Both worker processes run (whether a busy worker answers in time is ``status``'s business)."""
    return all(supervisor.is_up(s) for s in SERVICES)


def start(names: tuple[str, ...] = NAMES) -> None:
    """Starts the named workers that are not running and waits until each answers over the broker."""
    airflow.start()
    started = supervisor.start([BY_NAME[name] for name in names])
    _wait_until_answering([s.name for s in started])


def stop() -> None:
    for service in SERVICES:
        supervisor.stop(service)


def status() -> str:
    up = answering() if any(supervisor.running_pid(s) for s in SERVICES) else {}
    lines = []
    for service in SERVICES:
        state = supervisor.state(service)
        if state == "up":
            state = "up" if service.name in up else "not answering"
        lines.append(f"celery {service.name} {state}")
    return "\n".join(lines)
