"""The interpreter's garbage collector during a crawl.

A full collection scans every container object alive, and a crawl holds many for long (the level's links,
the URLs seen, the resources found): on the services-heavy benchmark each full collection paused the event
loop for 65-115 ms (or, run in another thread, held the GIL from it as long). While ``survivors_frozen``
is active (the crawl engine holds it for each level), what existed before it and what survived each full
collection is frozen (``gc.freeze``), so that a full collection scans only what is newer. Cyclic garbage
among frozen objects waits for the end of the block, when everything is unfrozen. While
``collection_paused`` is active (a crawl's state loading or saving), there is no collection at all.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

FULL = 2  # the oldest generation


def _freeze_survivors(phase: str, info: dict) -> None:
    if phase == "stop" and info["generation"] == FULL:
        gc.freeze()


@contextmanager
def survivors_frozen() -> Iterator[None]:
    """Full collections scan only what is newer than the block or their previous run, until the block ends."""
    gc.freeze()
    gc.callbacks.append(_freeze_survivors)
    try:
        yield
    finally:
        gc.callbacks.remove(_freeze_survivors)
        gc.unfreeze()


@contextmanager
def collection_paused() -> Iterator[None]:
    """No collection while a state becomes millions of lists and dicts or is made of them (none of them
    garbage): passes over the whole heap made loading and saving a state three times slower."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
