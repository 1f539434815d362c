"""The collector pause around snapshot reading and problem building: paused inside, nested
blocks share one pause, and the collector's own state comes back afterwards."""

from __future__ import annotations

import gc
import threading

import pytest

from solver import gcpause
from solver.gcpause import without_gc


def test_paused_inside_and_restored_after_nested_and_concurrent_blocks() -> None:
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def other() -> None:
        with without_gc():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with without_gc():
        assert not gc.isenabled()
        thread.start()
        assert inside.wait(10)
        with without_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread still reads
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled() -> None:
    gc.disable()
    try:
        with without_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_inside_still_restores_the_collector() -> None:
    try:
        with without_gc():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.isenabled()


def _tracked() -> int:
    gc.freeze()
    n = gc.get_freeze_count()
    gc.unfreeze()
    return n


def test_cycles_made_inside_many_blocks_are_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks move what they made to the oldest generation, which the collector walks only
    once it has grown by a quarter through its own promotions: moved objects never count, so
    without more the cyclic garbage of block after block (a plan's state and its closures, in
    a server or the FGD bench: 24 GB after 5,000 plans) is never freed. Cycles of three times
    the growth that calls for a full collection (a quarter of the heap, however large the
    test process's heap is), made block after block with allocations between them, leave at
    most that growth behind."""
    gc.collect()
    start = _tracked()
    monkeypatch.setattr(gcpause, "_kept", start)  # as if a full collection had just run
    monkeypatch.setattr(gcpause, "_grown", 0)
    monkeypatch.setattr(gcpause, "_due", False)
    growth = int(max(gcpause.GROWTH * start, start + gcpause.MIN_GROWTH)) - start
    per_block = max(1000, growth // 300)  # a few hundred blocks, however large the heap
    for _ in range(3 * growth // per_block + 1):
        with without_gc():
            for _ in range(per_block):
                cycle: list[object] = []
                cycle.append(cycle)
        junk = [[] for _ in range(2000)]  # young collections run, as between plans
        del junk
    assert _tracked() - start < growth + 2 * per_block + 5000


def test_a_small_block_does_not_count_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting the tracked objects walks them all: a block that made a few objects ends
    without a count; blocks that together made more than the rule allows end with one."""
    counts = []
    real = gc.get_freeze_count

    def counted() -> int:
        counts.append(1)
        return real()

    gc.collect()
    monkeypatch.setattr(gcpause, "_kept", _tracked())
    monkeypatch.setattr(gcpause, "_grown", 0)
    monkeypatch.setattr(gcpause, "_due", False)
    monkeypatch.setattr(gc, "get_freeze_count", counted)
    kept = []
    for _ in range(100):
        with without_gc():
            kept.append([[] for _ in range(10)])
    assert counts == []
    with without_gc():
        kept.append([[] for _ in range(gcpause.MIN_GROWTH + max(0, int((gcpause.GROWTH - 1) * gcpause._kept)))])
    assert counts == [1] and gcpause._due


def test_a_block_inside_a_plan_leaves_a_due_collection_to_the_next_that_allows_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection due at a plan's second block would walk the whole problem inside its
    deadline (1 s at 15,000 nodes): ``collect=False`` leaves it due, and the next block that
    allows one runs it."""
    collections = []
    real = gc.collect

    def counted(*args: int) -> int:
        collections.append(1)
        return real(*args)

    monkeypatch.setattr(gcpause, "_due", True)
    monkeypatch.setattr(gc, "collect", counted)
    with without_gc(collect=False):
        pass
    assert collections == [] and gcpause._due
    with without_gc():
        pass
    assert collections == [1] and not gcpause._due
