"""The compiled-selector cache: least recently used first out, bounded by bytes.

A compiled selector is celpy's lark tree of the expression, and it is large: about 700 bytes
per grammar node, 12 MB for a 10 KiB selector of small literals (``program_bytes``). Kept
without a bound, a server that is sent new selectors grows by that much per selector and never
shrinks; kept by entry count, 300 classes of one 10 KiB selector each are 3.6 GB. So the cache
holds at most ``limit`` bytes of programs, by the estimate of each program's size, and drops
the least recently used first. One per process, shared by every thread (a lock around each
step). A program larger than the whole limit is handed back but not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Generic, TypeVar

import lark

K = TypeVar("K")
V = TypeVar("V")

DEFAULT_LIMIT = 256 * 1024 * 1024  # bytes: --cel-cache-mb 256

# The size of a compiled program, measured with tracemalloc (retained after compiling, with the
# garbage collected) on selectors from 40 characters to 10 KiB of every grammar shape:
# 22 KB for ``device.driver == "x"`` (23 nodes), 670-740 bytes a node past a few hundred nodes
# (12.0 MB for 17,821 nodes). The estimate is above every measurement
# (tests/cel/test_cel.py, test_the_program_size_estimate_is_conservative).
PROGRAM_BASE_BYTES = 24 * 1024
PROGRAM_NODE_BYTES = 768
ERROR_BYTES = 1024  # a cached CelError, besides its expression's text


def program_bytes(tree: lark.Tree[Any]) -> int:
    """The estimated bytes of a compiled program whose (rewritten) tree is ``tree``: every
    tree and every token counts as a node."""
    nodes = 0
    for sub in tree.iter_subtrees():
        nodes += 1 + sum(1 for child in sub.children if not isinstance(child, lark.Tree))
    return PROGRAM_BASE_BYTES + PROGRAM_NODE_BYTES * nodes


class ByteLru(Generic[K, V]):
    """A mapping of at most ``limit`` bytes, by the size each entry is put with; the least
    recently used entries leave first."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit
        self.bytes = 0  # the sizes of the entries held
        self.evicted = 0  # entries dropped to make room, since the start

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                return None
            self._items.move_to_end(key)
            return found[0]

    def put(self, key: K, value: V, size: int) -> bool:
        """Keep ``value`` (making room by dropping the least recently used); False when it is
        larger than the whole limit, and so not kept."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if size > self.limit:
                return False
            self._items[key] = (value, size)
            self.bytes += size
            self._shrink()
            return True

    def resize(self, limit: int) -> None:
        with self._lock:
            self.limit = limit
            self._shrink()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _shrink(self) -> None:
        while self.bytes > self.limit and self._items:
            _, (_, size) = self._items.popitem(last=False)
            self.bytes -= size
            self.evicted += 1
