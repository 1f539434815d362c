"""The collector pause around snapshot reading and problem building: paused inside, nested
blocks share one pause, and the collector's own state comes back afterwards."""

from __future__ import annotations

import gc
import threading

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
