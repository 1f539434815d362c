"""The watch cache: list, then watch from the list's resourceVersion, per kind.

A dropped stream is re-watched from the last resourceVersion seen; a 410 Gone (or any
error) relists, with exponential backoff. ``generation`` counts applied changes, so the
control loop replans only when something changed. The cache's objects are the dicts the
API printed: ``objects()`` is what ``solver.kube`` reads, the same translation as a
recorded snapshot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from adapter.cluster import KINDS, Cluster, Gone, Kind

LOG = logging.getLogger("gangplace.adapter.cache")
Obj = dict[str, Any]


def key_of(obj: Obj) -> str:
    meta = obj.get("metadata", {})
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class WatchCache:
    def __init__(self, cluster: Cluster, kinds: Iterable[Kind] = KINDS, *, watch_timeout: int = 30,
                 backoff: tuple[float, float] = (0.05, 5.0)) -> None:
        self.cluster = cluster
        self.kinds = tuple(kinds)
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self._objects: dict[str, dict[str, Obj]] = {k.name: {} for k in self.kinds}
        self._lock = threading.Condition()
        self._synced: set[str] = set()
        self.generation = 0
        # (generation, time.monotonic()) of the latest changes, for how long a plan made from an
        # older generation has been behind (``behind_since``)
        self._stamps: deque[tuple[int, float]] = deque(maxlen=4096)
        self.relists = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        for kind in self.kinds:
            t = threading.Thread(target=self._run, args=(kind,), name=f"watch-{kind.plural}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, join: float = 0.0) -> None:
        """End the watches; with ``join``, wait up to that many seconds for their threads (a
        watch blocked on a quiet stream ends at its timeout)."""
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
        deadline = time.monotonic() + join
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    @property
    def synced(self) -> bool:
        """Every kind listed at least once (readiness)."""
        with self._lock:
            return len(self._synced) >= len(self.kinds)

    def wait_synced(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._synced) < len(self.kinds):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def wait_change(self, since: int, timeout: float) -> int:
        """Block until ``generation`` passes ``since`` (or the timeout); the new generation."""
        with self._lock:
            if self.generation == since:
                self._lock.wait(timeout)
            return self.generation

    # ---- reads ---------------------------------------------------------------------------
    def objects(self) -> list[Obj]:
        return self.snapshot()[1]

    def of_kind(self, kind: str) -> list[Obj]:
        """The objects of one kind, unsorted (a metric read at scrape time)."""
        with self._lock:
            return list(self._objects.get(kind, {}).values())

    def snapshot(self) -> tuple[int, list[Obj]]:
        """The objects and the generation they are, read at one instant."""
        with self._lock:
            return self.generation, [o for kind in self.kinds for _, o in sorted(self._objects[kind.name].items())]

    def behind_since(self, generation: int) -> float | None:
        """When the first change after ``generation`` was applied (time.monotonic()), or None if
        there has been none; a change too old to be remembered counts as the oldest remembered."""
        with self._lock:
            if self.generation <= generation:
                return None
            first = next((t for g, t in self._stamps if g > generation), None)
            return first if first is not None else (self._stamps[0][1] if self._stamps else None)

    def get(self, kind: str, key: str) -> Obj | None:
        with self._lock:
            return self._objects.get(kind, {}).get(key)

    # ---- the per-kind loop ---------------------------------------------------------------
    def _run(self, kind: Kind) -> None:
        delay = self.backoff[0]
        while not self._stop.is_set():
            try:
                items, rv = self.cluster.list(kind)
                self._replace(kind, items)
                while not self._stop.is_set():
                    for etype, obj in self.cluster.watch(kind, rv, timeout=self.watch_timeout):
                        if self._stop.is_set():
                            return
                        rv = obj.get("metadata", {}).get("resourceVersion", rv)
                        if etype != "BOOKMARK":
                            self._apply(kind, etype, obj)
                    delay = self.backoff[0]  # the stream ended cleanly: watch again from rv
            except Gone:
                LOG.info("watch %s: 410 Gone, relisting", kind.plural)
                self.relists += 1
            except Exception as exc:  # a dropped connection, a 5xx: back off and relist
                if self._stop.is_set():
                    return
                LOG.info("watch %s: %s; relisting in %.2fs", kind.plural, exc, delay)
                self.relists += 1
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff[1])

    def _replace(self, kind: Kind, items: list[Obj]) -> None:
        with self._lock:
            fresh = {key_of(o): o for o in items}
            if fresh != self._objects[kind.name]:
                self._objects[kind.name] = fresh
                self.generation += 1
                self._stamps.append((self.generation, time.monotonic()))
            self._synced.add(kind.name)
            self._lock.notify_all()

    def _apply(self, kind: Kind, etype: str, obj: Obj) -> None:
        with self._lock:
            store = self._objects[kind.name]
            if etype == "DELETED":
                store.pop(key_of(obj), None)
            else:
                store[key_of(obj)] = obj
            self.generation += 1
            self._stamps.append((self.generation, time.monotonic()))
            self._lock.notify_all()
