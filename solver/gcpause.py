"""Pausing Python's cyclic garbage collector around work that allocates millions of objects.

Reading a snapshot and building its problem make millions of small dicts, lists, tuples and
frozen dataclasses, none of them in a cycle. Every 700 net allocations start a collection of
the youngest generation, and the older generations are walked ever more often as the heap
grows, so on a 15,000-node snapshot the collector took most of the time: json.loads of its
72 MB 3.2 s with it and 0.5 s without; building the problem 6.5 s and 2.3 s. Reference
counting still frees everything the moment it is dropped; only cycles wait, and the
collector resumes when the last holder (of any thread) is done.

When it resumes, what the block allocated is moved to the oldest generation first
(``gc.freeze`` then ``gc.unfreeze``, two list splices). Otherwise the first allocation after
the block starts a collection of the youngest generation over every object the block made:
0.8 s for a 15,000-node snapshot, the same whether the block ended in a plan or was stopped
(a cancelled call held its slot that long). The oldest generation is walked only when it
has grown by a quarter, as the collector always does.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False


@contextmanager
def without_gc() -> Iterator[None]:
    """The collector paused inside the block (nested and concurrent blocks share one pause)."""
    global _gc_holders, _gc_was_enabled
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                gc.freeze()  # everything tracked, the block's millions included, to the permanent generation
                gc.unfreeze()  # and back, into the oldest: no young collection walks them now
                gc.enable()
