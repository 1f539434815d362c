"""A plan's stop, seen by every phase: once the caller has gone (a cancelled or expired gRPC
call), the work in progress ends at its next ``checkpoint`` with ``Stopped`` instead of
finishing a plan nobody will read.

``api.plan`` enters ``watching(options.stop)`` for the thread that plans; the phases call
``checkpoint()`` at their boundaries and every few hundred steps of their long loops (problem
building per class and node, model building per constraint family, the per-domain solves,
decoding, every rule of the verifier). Outside ``watching``, or without a stop, it costs a
thread-local read. CEL evaluations read the same stop (``cel.charge._charge``). Pure: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from solver.core.errors import StoppedError

_LOCAL = threading.local()


class Stopped(StoppedError):
    """The plan's stop was set: the caller cancelled the call or its deadline passed."""

    def __init__(self, where: str = "") -> None:
        self.where = where
        super().__init__(f"stopped{f' during {where}' if where else ''}: the caller cancelled or its deadline passed")


@contextmanager
def watching(stop: threading.Event | None) -> Iterator[None]:
    """This thread's checkpoints raise ``Stopped`` once ``stop`` is set."""
    before = getattr(_LOCAL, "stop", None)
    _LOCAL.stop = stop
    try:
        yield
    finally:
        _LOCAL.stop = before


def checkpoint(where: str = "") -> None:
    """Raise ``Stopped`` if this thread's plan was stopped."""
    stop = getattr(_LOCAL, "stop", None)
    if stop is not None and stop.is_set():
        raise Stopped(where)


def stopped() -> bool:
    """Whether this thread's plan was stopped (for a loop that ends by itself rather than raise)."""
    stop = getattr(_LOCAL, "stop", None)
    return stop is not None and stop.is_set()
