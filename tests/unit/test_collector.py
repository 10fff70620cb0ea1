"""survivors_frozen: during a crawl, a full garbage collection scans only what is newer than the crawl or than
the previous full collection, and nothing stays frozen after it; collection_paused: none at all in its
block."""

from __future__ import annotations

import gc
import weakref

from geoweb.crawl.collector import collection_paused, survivors_frozen


class Node:
    def __init__(self) -> None:
        self.other = self  # a cycle: only the collector frees it


def test_full_collections_freeze_their_survivors_and_the_end_unfreezes_them():
    gc.collect()
    assert gc.get_freeze_count() == 0
    with survivors_frozen():
        before = gc.get_freeze_count()
        assert before > 0  # what existed before the block
        survivors = [Node() for _ in range(100)]
        gc.collect()
        assert gc.get_freeze_count() >= before + len(survivors)  # what survived a full collection
        dropped = Node()
        gone = weakref.ref(dropped)
        gc.collect()
        del dropped
        gc.collect()  # frozen, the dropped cycle is passed by
        assert gone() is not None
    assert gc.get_freeze_count() == 0
    assert all(getattr(cb, "__name__", "") != "_freeze_survivors" for cb in gc.callbacks)  # removed
    gc.collect()
    assert gone() is None  # unfrozen, the cycle is collected


def test_collection_paused_stops_collections_in_its_block_and_restores_what_was():
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collection_paused():
            pass
        assert not gc.isenabled()  # a collector already off stays off
    finally:
        gc.enable()
