"""Redis: the Celery broker."""

from __future__ import annotations

import socket
import subprocess
import time

from stack.layout import LOGS, REDIS_PORT, RUN, VAR

PID_FILE = RUN / "redis.pid"


def running() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start() -> None:
    if running():
        return
    for folder in (RUN, LOGS, VAR / "redis"):
        folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--daemonize", "yes",
         "--pidfile", str(PID_FILE), "--logfile", str(LOGS / "redis.log"), "--dir", str(VAR / "redis"),
         "--save", "", "--appendonly", "no"],
        check=True,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not running():
        if time.monotonic() > deadline:
            raise RuntimeError(f"Redis did not start; see {LOGS / 'redis.log'}")
        time.sleep(0.1)


def stop() -> None:
    subprocess.run(
        ["redis-cli", "-p", str(REDIS_PORT), "shutdown", "nosave"], check=False, capture_output=True
    )


def status() -> str:
    return f"redis 127.0.0.1:{REDIS_PORT} " + ("up" if running() else "down")
