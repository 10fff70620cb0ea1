"""OWSLib off the crawl's event loop: capabilities documents are read in a pool of worker processes.

OWSLib is synchronous and can take over a second on a big document, which would stall every fetch of the
crawl. ``ValidationPool.read`` runs ``read_capabilities`` in a worker process (forkserver, OWSLib imported
once in the server) and awaits it. Each worker's address space is bounded (``validation_memory_bytes``,
RLIMIT_AS) from its initializer, and its priority lowered (``validation_nice``) so that the crawl's event loop
keeps a core when the workers are busy.

A document's time limit (``validation_timeout``) is CPU time of its worker, counted there by a profiling
timer: a niced worker on a busy machine may wait many times that for a core, and its document is no slower
for it. Over the limit, the document is a miss naming it and the worker goes on. A worker that takes
``WALL_LIMIT_FACTOR`` times the limit in wall time (stuck where the timer cannot stop it) is ended: the pool
is replaced (``concurrent.futures`` cannot replace one worker), and the documents that were in the pool with
it are read again once on the new pool. A worker that dies is replaced the same way; a document that kills a
worker twice is a miss. A document over the memory bound is a miss too; the worker survives it. At most
``validation_workers`` documents are in the pool at once, so no limit counts a wait for a worker.

Where a process may have no children (Celery's prefork pool marks its worker children daemonic, and
multiprocessing refuses them any process), documents are read in a thread instead, logged once: the loop
stays free and the time limit holds, the memory bound does not.

Like every forkserver child, a worker imports the program's main module first: a script that crawls needs
the ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import resource
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from geoweb.errors import GeowebError
from geoweb.models import Resource
from geoweb.settings import Settings

log = logging.getLogger(__name__)

# A worker is ended when its document has taken this many times the CPU limit in wall time: time enough for a
# niced worker to get its CPU on a busy machine, and a bound on one stuck outside Python.
WALL_LIMIT_FACTOR = 10


class ValidationTimeout(GeowebError):
    reason = "validation_timeout"
    user_msg = "Reading the capabilities document took longer than the time limit"


class ValidationMemory(GeowebError):
    reason = "validation_memory"
    user_msg = "Reading the capabilities document needed more memory than the bound"


class ValidationCrashed(GeowebError):
    reason = "validation_crashed"
    user_msg = "The process reading the capabilities document died"


class _OverCpuLimit(BaseException):
    """Raised in a worker by its profiling timer; no Exception, so that no reader's handler swallows it."""


def _over_cpu_limit(signum, frame) -> None:
    raise _OverCpuLimit


def _init_worker(memory_bytes: int, nice: int) -> None:
    """Worker initializer: bound the address space (OWSLib is already imported by the forkserver), yield the
    CPU to the crawl's event loop, which would otherwise stall while workers hold every core, and end a reading
    when its CPU time is up (``_read``)."""
    signal.signal(signal.SIGPROF, _over_cpu_limit)
    if memory_bytes > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    os.nice(nice)


def _started() -> int:
    return os.getpid()


def _read(body: bytes, url: str, max_bytes: int, cpu_seconds: float | None = None) -> Resource:
    """``read_capabilities``, within ``cpu_seconds`` of this process's CPU time (ITIMER_PROF) when given: in a
    worker, whose initializer handles the timer's signal; never in a thread (only a main thread takes
    signals)."""
    from geoweb.detect.ogc import read_capabilities

    if cpu_seconds is None:
        return read_capabilities(body, url, max_bytes=max_bytes)
    try:
        signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
        try:
            return read_capabilities(body, url, max_bytes=max_bytes)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _OverCpuLimit:  # also when the timer fired as the reading ended
        raise ValidationTimeout(
            f"OWSLib took over {cpu_seconds:g} s of CPU (validation_timeout); its worker went on"
        ) from None


class ValidationPool:
    """Worker processes reading capabilities documents, with a time limit per document and a memory bound
    per worker. One per process and settings (``validation_pool``), used from one event loop at a time."""

    def __init__(self, workers: int, timeout: float, memory_bytes: int, nice: int = 0):
        if workers < 1:
            raise ValueError(f"validation_workers must be at least 1, not {workers}")
        self.workers, self.timeout, self.memory_bytes, self.nice = workers, timeout, memory_bytes, nice
        self._executor: ProcessPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots = asyncio.Semaphore(workers)
        self._starting = asyncio.Lock()
        self.replaced = 0  # pools ended after a timeout or a dead worker
        self.inline = multiprocessing.current_process().daemon  # no worker processes: read in a thread

    def _bind(self) -> None:
        """asyncio's locks belong to one loop: a pool used from a new loop (a new crawl) gets new ones."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._slots, self._starting = loop, asyncio.Semaphore(self.workers), asyncio.Lock()

    async def _ready(self) -> ProcessPoolExecutor | None:
        """The running pool, started first if need be, in a thread: starting the forkserver (it imports
        OWSLib) and the workers blocks for seconds, and no document's time limit runs meanwhile. None where
        this process cannot have worker processes (a Celery prefork worker's child is daemonic)."""
        async with self._starting:
            if self._executor is None and not self.inline:
                try:
                    self._executor = await asyncio.get_running_loop().run_in_executor(None, self._start)
                except (AssertionError, OSError, BrokenProcessPool, TypeError) as exc:
                    self.inline = True
                    log.warning("no validation worker processes here (%s: %s): capabilities documents are read "
                                "in a thread, with the time limit but no memory bound", type(exc).__name__, exc)  # fmt: skip
            return self._executor

    def _start(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["geoweb.detect.ogc"])
        executor = ProcessPoolExecutor(
            self.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(self.memory_bytes, self.nice),
        )
        # every worker up before the pool is used: later submits from the event loop spawn nothing
        for started in [executor.submit(_started) for _ in range(self.workers)]:
            started.result()
        return executor

    def _replace(self, executor: ProcessPoolExecutor | None, why: str) -> None:
        """End ``executor``'s workers (once, whoever asks first); the next read starts a new pool."""
        if executor is None or self._executor is not executor:
            return
        self._executor = None
        self.replaced += 1
        log.warning("validation pool replaced: %s", why)
        # concurrent.futures has no public way to stop a busy worker before Python 3.14
        for process in list(getattr(executor, "_processes", {}).values()):
            process.kill()
        executor.shutdown(wait=False, cancel_futures=True)

    async def read(self, body: bytes, url: str, max_bytes: int) -> Resource:
        """``read_capabilities(body, url)`` in a worker. Raises what it raises (NotCapabilities,
        InvalidCapabilities, UnsafeContent...), or ValidationTimeout, ValidationMemory, ValidationCrashed."""
        self._bind()
        loop = asyncio.get_running_loop()
        retried = False
        async with self._slots:
            while True:
                executor = await self._ready()
                try:
                    if executor is None:
                        # a thread, whose CPU time no timer counts: the limit is wall time, and a thread past
                        # it is abandoned (it ends with its document)
                        future = loop.run_in_executor(None, _read, body, url, max_bytes)
                        wall_limit = self.timeout
                    else:
                        future = loop.run_in_executor(executor, _read, body, url, max_bytes, self.timeout)
                        wall_limit = self.timeout * WALL_LIMIT_FACTOR
                    return await asyncio.wait_for(future, wall_limit)
                except TimeoutError:
                    self._replace(executor, f"{url} took over {wall_limit:g} s")
                    ended = "" if executor is None else "; its worker was ended"
                    raise ValidationTimeout(
                        f"OWSLib took over {wall_limit:g} s of wall time (validation_timeout){ended}"
                    ) from None
                except MemoryError:
                    raise ValidationMemory(
                        f"over the {self.memory_bytes} bytes of a worker (validation_memory_bytes)"
                    ) from None
                except BrokenProcessPool:
                    self._replace(executor, f"a worker died while reading {url}")
                    if retried:
                        raise ValidationCrashed("the worker reading it died, twice") from None
                    retried = True

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


_POOLS: dict[tuple[int, float, int, int], ValidationPool] = {}


def validation_pool(settings: Settings) -> ValidationPool:
    """The process's pool for these settings' worker count, time limit, memory bound and priority."""
    key = (
        settings.validation_workers,
        settings.validation_timeout,
        settings.validation_memory_bytes,
        settings.validation_nice,
    )
    if key not in _POOLS:
        _POOLS[key] = ValidationPool(*key)
    return _POOLS[key]
