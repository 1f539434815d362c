"""The served solver's memory guard: no request the server accepts can take it down.

Two lines of defence, both answered RESOURCE_EXHAUSTED with ErrorInfo reason ``MEMORY``:

- **Admission.** A call is admitted only if its estimate fits in what the budget has left
  after the process's resident size and the estimates of the calls already running. The
  estimate is ``PER_CALL + PER_INPUT x request bytes``, from ``gangplace bench
  --served-memory`` (docs/performance.md): the worst case measured is 16.5 MiB of peak per
  MiB of JSON request, and the smallest cases peak at ~12 MiB over idle. A typed
  ``ClusterState`` carries no field names, so one of its bytes stands for more objects: it
  counts ``TYPED_DENSITY`` times (an assumption, not a measurement: the watcher below is
  what holds when it is wrong).
- **The watcher.** While calls run, a thread reads the resident size every ``PERIOD``
  seconds; past the budget, it stops the running call with the largest estimate. That call
  stops at its next checkpoint (solver.core.stopping: reading, problem, CEL, hint, build,
  search, decoding, verifying), as a cancelled call does, and is answered MEMORY.

After each call freed heap is handed back to the kernel (``malloc_trim``), so an idle
server is as small as its caches. The budget is ``--memory-limit-mb``, by default
``SHARE`` of the container's memory limit (cgroup v2 ``memory.max``, v1
``memory.limit_in_bytes``) or of the machine's memory when there is none.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from solver.core.errors import LimitError

MIB = 1 << 20
PER_INPUT = 20  # bytes of peak per request byte: the worst measured is 16.5
PER_CALL = 48 * MIB  # a model, CP-SAT's arenas and the verifier, on top of the input's share
TYPED_DENSITY = 4  # a typed request's byte counts as this many JSON bytes (assumed)
SHARE = 0.8  # of the container's (or machine's) memory
PERIOD = 0.05  # seconds between two reads of the resident size while calls run
REASON = "MEMORY"  # ErrorInfo.reason


def resident() -> int:
    """This process's resident size in bytes (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 says "max" for no limit


def available() -> int:
    """The memory this process may use: the cgroup's limit, else the machine's memory."""
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        limit = _read_int(path)
        if limit is not None and 0 < limit < machine:
            return limit
    return machine


def default_budget() -> int:
    return int(available() * SHARE)


def estimate(request_bytes: int, *, typed: bool) -> int:
    return PER_CALL + PER_INPUT * request_bytes * (TYPED_DENSITY if typed else 1)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, from the symbols already loaded (``CDLL(None)``), never through
    ``ctypes.util.find_library``: that runs ``ldconfig`` in a child process, and a fork beside
    grpc's threads can hang (a served process then did not exit on SIGTERM)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_TRIM = _malloc_trim()


def trim() -> None:
    """Give freed heap back to the kernel (glibc; elsewhere nothing). No ``gc.collect``: over
    a heap of millions of objects it takes seconds, and the collector runs on its own."""
    if _TRIM is not None:
        _TRIM(0)


class OverBudget(LimitError):
    """A call refused at admission: ``need`` bytes estimated, ``free`` left of ``budget``;
    ``never`` when it would not fit beside the ``idle`` server (the floor: its caches, imports
    and the resident size before the first call) either: a limit; else the server is busy."""

    def __init__(self, need: int, free: int, budget: int, idle: int) -> None:
        self.need, self.free, self.budget = need, free, budget
        self.never = need + idle > budget  # even with no other call running
        super().__init__(
            f"this request needs about {need // MIB} MiB and {max(free, 0) // MIB} MiB of the server's "
            f"{budget // MIB} MiB budget are free" + ("; it would not fit even on an idle server "
                                                      "(--memory-limit-mb)" if self.never else "; retry later"))


@dataclass(eq=False, slots=True)
class Ticket:
    """One admitted call: its estimate, and how the watcher stops it."""

    need: int
    stop: Callable[[], None]
    stopped_at: int = 0  # the resident size when the watcher stopped it (0: not stopped)


@dataclass(slots=True)
class Guard:
    budget: int  # bytes; 0: no guard
    read: Callable[[], int] = resident
    period: float = PERIOD
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _running: list[Ticket] = field(default_factory=list)
    _watcher: threading.Thread | None = None
    _floor: int = 0  # the smallest resident size seen while no call ran
    _wake: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._wake = threading.Condition(self._lock)

    def admit(self, need: int, stop: Callable[[], None]) -> Ticket:
        """A ticket for a call needing ``need`` bytes, or OverBudget."""
        ticket = Ticket(need=need, stop=stop)
        if not self.budget:
            return ticket
        with self._lock:
            size = self.read()
            if not self._running:
                self._floor = min(self._floor, size) if self._floor else size
            free = self.budget - size - sum(t.need for t in self._running)
            if need > free:
                raise OverBudget(need, free, self.budget, self._floor or size)
            self._running.append(ticket)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="memguard", daemon=True)
                self._watcher.start()
            self._wake.notify()
        return ticket

    def release(self, ticket: Ticket) -> None:
        with self._lock:
            if ticket in self._running:
                self._running.remove(ticket)
            idle = not self._running
        if idle and self.budget:  # off the call's path: its slot is freed first
            threading.Thread(target=trim, name="memguard-trim", daemon=True).start()

    def _watch(self) -> None:
        while True:
            with self._lock:
                while not self._running:
                    self._wake.wait()
                size = self.read()
                # one call at a time: the next only if the process stays over once that one ended
                if size > self.budget and not any(t.stopped_at for t in self._running):
                    live = self._running
                    if live:
                        victim = max(live, key=lambda t: t.need)
                        victim.stopped_at = size
                        victim.stop()
            time.sleep(self.period)
