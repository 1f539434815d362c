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
(a cancelled call held its slot that long).

The collector walks the oldest generation only once its own promotions have grown it by a
quarter; objects moved there by ``unfreeze`` never count, so without more the cyclic garbage
of block after block (a plan's state, its closures) was never freed: the FGD bench, 10,000
plans in one process, reached 24 GB and was killed. So the pause keeps the rule itself: when
a block ends with a quarter more tracked objects than the last full collection left, the
next block starts with a full collection. At its start, not the end: what the ended block
read is then mostly freed by reference counting, and the walk is over what lives.

Counting the tracked objects walks them all (``gc.get_freeze_count`` measures a list): 22 ms
at 2 million objects, once per plan, which was a fifth of the FGD bench's time. So a block
ends with an upper bound instead, in constant time: the youngest generation's count, which
allocations raise and deallocations lower (the collector is off inside, and ``freeze`` sets
it to zero), summed over the blocks since the last count. Only when that sum could pass the
rule are the objects counted, and the sum starts again from what the count found.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_holders = 0
_gc_was_enabled = False
_kept = 0  # tracked objects the last full collection left
_grown = 0  # at least how many more there are now: exact at a count, then raised by each block
_due = False  # the heap has grown by a quarter since: the next block starts with a full collection
GROWTH = 1.25
MIN_GROWTH = 50_000  # objects: a small heap is not walked again for a few thousand


def _tracked() -> int:
    """Tracked objects, every generation (two list splices and a walk of the list)."""
    gc.freeze()
    n = gc.get_freeze_count()
    gc.unfreeze()
    return n


def _past_rule(grown: int) -> bool:
    """``grown`` more tracked objects than the last full collection left call for another."""
    return grown > max((GROWTH - 1) * _kept, MIN_GROWTH)


@contextmanager
def without_gc(*, collect: bool = True) -> Iterator[None]:
    """The collector paused inside the block (nested and concurrent blocks share one pause).
    ``collect=False``: a block inside a plan's deadline, after its first; a full collection
    due waits for the next block that allows one (the next plan's first). Between a plan's
    blocks it walks the whole problem for garbage that is freed with the plan: 1 s of a 10 s
    deadline at 15,000 nodes."""
    global _gc_holders, _gc_was_enabled, _kept, _grown, _due
    with _gc_lock:
        if _gc_holders == 0:
            _gc_was_enabled = gc.isenabled()
            if _due and _gc_was_enabled and collect:
                gc.collect()
                _kept, _grown, _due = _tracked(), 0, False
            gc.disable()
        _gc_holders += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_holders -= 1
            if _gc_holders == 0 and _gc_was_enabled:
                _grown += gc.get_count()[0]  # what the block made, at most (read before freeze zeroes it)
                gc.freeze()  # everything tracked, the block's millions included, to the permanent generation
                gc.unfreeze()  # and back, into the oldest: no young collection walks them now
                if _past_rule(_grown):  # it may have: count
                    _grown = _tracked() - _kept
                    _due = _past_rule(_grown)
                gc.enable()
