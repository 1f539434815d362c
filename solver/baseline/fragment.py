"""Fragmentation against the pods expected to arrive (``PlanOptions.expected``), for the hint.

A node's devices are fragmented for an expected pod when it cannot use them: all of the
node's idle device capacity when the pod does not fit the node at all (its requests, or not
enough devices with room for its device request), else the idle capacity of the devices it
could not take a share or a device of. Weighted by the expected pods' shares, summed, that
is the node's fragmentation; a placement's score is how much it lowers it, squashed to an
integer 0..100 as kube-scheduler scores (``score``). This is the measure of Weng et al.'s
fragmentation gradient descent (FGD, USENIX ATC'23; docs/fgd.md), stated for DRA devices:
idle capacity is counted in devices (a metered device's least free share of its
capacities, an ordinary device 1 when free, a shareable unmetered one never).

Exact per device: whether a device has room for an expected pod's request is the
allocator's own test (``Devices.free``, consumable capacity with its policies, counters).
Whether the pod fits counts the devices with room against the request's count, without
the allocator's search over counters two devices share (docs/fragmentation.md).

Fragmentation depends only on a node's state, so it is remembered by that state across
plans (``_Memory``, bounded).
Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from solver.baseline.devices import Devices, Load
from solver.core import snapshot as s
from solver.filters import consumable

if TYPE_CHECKING:
    from solver.problem.build import Problem

# a device type's state, as far as fragmentation can tell: which expected pods its devices
# answer, its capacities, what of them is in use, whether it is metered, its free devices
TypeState = tuple[tuple[bool, ...], tuple[s.Consumable, ...], tuple[int, ...], bool, int]
# a node's state: its free requests, and its types' states by number (``_Memory.numbered``), sorted
NodeState = tuple[tuple[int, ...], tuple[int, ...]]

CACHE_SIZE = 1 << 16  # node states remembered across plans, per mix of expected pods (~150 bytes each)
MIXES = 2  # mixes remembered


class _Memory:
    """What one mix of expected pods remembers across plans: type states by number, and the
    fragmentation of node states (a few bytes per node state, however many expected pods)."""

    def __init__(self) -> None:
        self.numbers: dict[TypeState, int] = {}
        self.types: list[TypeState] = []
        self.values: dict[NodeState, float] = {}

    def numbered(self, states: list[TypeState]) -> tuple[int, ...]:
        """The states' numbers, sorted: a node's types as a key, whatever their order. When
        they might not fit, the numbers and the values go first (never half way)."""
        if len(self.types) + len(states) > CACHE_SIZE:
            self.numbers.clear()
            self.types.clear()
            self.values.clear()
        out = []
        for ts in states:
            got = self.numbers.get(ts)
            if got is None:
                got = self.numbers[ts] = len(self.types)
                self.types.append(ts)
            out.append(got)
        return tuple(sorted(out))


_memories: dict[tuple[s.ExpectedPod, ...], _Memory] = {}


def score(before: float, after: float) -> int:
    """0..100: how much a placement lowers the node's fragmentation (in devices), through a
    logistic: 50 for no change. Coarse on purpose (FGD's integer score): differences under
    about 0.04 of a device near zero are ties, settled by the seeded node order."""
    x = max(-50.0, min(50.0, before - after))
    return int(100 / (1 + math.exp(-x)))


def tie_order(seed: int, node: s.NodeName) -> bytes:
    """A node's place among equal scores: a hash of the plan's seed and its name."""
    return hashlib.blake2b(f"{seed}/{node}".encode(), digest_size=8).digest()


class Fragmentation:
    """Fragmentation of the hint's nodes as its placements change them."""

    def __init__(self, problem: Problem, dev: Devices) -> None:
        self.problem = problem
        self.dev = dev
        self.pods = problem.expected
        total = sum(p.weight for p in self.pods)
        self.shares = tuple(p.weight / total for p in self.pods)
        slots = problem.dra.expected_slots
        # the device types each expected pod's request may take (any node)
        self.eligible: tuple[frozenset[int], ...] = tuple(
            frozenset(slots[i][0].eligible[0]) if i < len(slots) and slots[i] else frozenset()
            for i in range(len(self.pods)))
        self.resources = tuple(sorted({r for p in self.pods for r, _ in p.requests}))
        self.asked = tuple(tuple(dict(p.requests).get(r, 0) for r in self.resources) for p in self.pods)
        if self.pods not in _memories and len(_memories) >= MIXES:
            _memories.pop(next(iter(_memories)))
        self._memory = _memories.setdefault(self.pods, _Memory())
        self._answers: dict[int, tuple[bool, ...]] = {}
        # a type's state by what is taken of it (this plan's; evictions change what is held: forget)
        self._types: dict[tuple[int, int, tuple[int, ...]], TypeState] = {}
        self._rooms: dict[tuple[object, ...], int] = {}

    def forget(self) -> None:
        """What is held changed (an eviction, or one undone): type states are worked out again."""
        self._types.clear()

    def _type_state(self, t: int, extra: Load | None) -> TypeState:
        dev = self.dev
        dtype = dev.dra.types[t]
        key = None
        if not dtype.consumes:  # else its room depends on other types' use of the counters
            n = dev.load.n[t] + (extra.n[t] if extra else 0)
            key = (t, n, tuple(dev.load.cap[t, c.name] + (extra.cap[t, c.name] if extra else 0)
                               for c in dtype.consumable))
            if (got := self._types.get(key)) is not None:
                return got
        answers = self._answers.get(t)
        if answers is None:
            answers = self._answers[t] = tuple(t in e for e in self.eligible)
        in_use: tuple[int, ...] = ()
        if dtype.metered:
            used = dev.capacity_in_use(t, extra)
            in_use = tuple(used[c.name] for c in dtype.consumable)
            # a metered device without capacities is used up by its first share
            free_n = 0 if not dtype.consumable and dev.in_use(t, extra) else min(1, max(0, dev.free(t, extra)))
        elif dtype.shareable:
            free_n = 0
        else:
            free_n = min(dtype.size, max(0, dev.free(t, extra)))
        state = (answers, dtype.consumable if dtype.metered else (), in_use, dtype.metered, free_n)
        if key is not None:
            self._types[key] = state
        return state

    def node_state(self, node: s.NodeName, free: Mapping[str, int], extra: Load | None = None) -> NodeState:
        numbers = self._memory.numbered([self._type_state(t, extra) for t in self.dev.local.get(node, ())])
        return tuple(free.get(r, 0) for r in self.resources), numbers

    def after_share(self, free: Mapping[str, int]) -> Callable[[int, s.SubRequest, Load], float]:
        """For ``Devices.prefer``: the node's fragmentation after one more share of a request on
        a metered type, beside what the request took so far (``free``: the node's requests left)."""
        seen: dict[tuple[object, ...], float] = {}  # alike devices of a node rank alike

        def rank(t: int, sub: s.SubRequest, taken: Load) -> float:
            dtype = self.dev.dra.types[t]
            if dtype.node is None:
                return 0.0
            key = (dtype.node, sub, self._type_state(t, taken), _taken(taken))
            got = seen.get(key)
            if got is None:
                extra = taken.copy()
                extra.add(dtype, sub, 1)
                got = seen[key] = self.of(self.node_state(dtype.node, free, extra))
            return got
        return rank

    def of(self, state: NodeState) -> float:
        """The node's fragmentation, in devices (cached by state)."""
        memory = self._memory
        got = memory.values.get(state)
        if got is None:
            if len(memory.values) >= CACHE_SIZE:
                memory.values.clear()
            got = memory.values[state] = self._fragmentation(state)
        return got

    def _room(self, ts: TypeState, i: int) -> int:
        key = (ts[1], ts[2], ts[3], ts[4], i)
        got = self._rooms.get(key)
        if got is None:
            sub = self.pods[i].device
            got = self._rooms[key] = _room(ts, sub) if sub is not None else 0
        return got

    def _fragmentation(self, state: NodeState) -> float:
        free, numbers = state
        types = [self._memory.types[n] for n in numbers]
        idle = [_idle(ts) for ts in types]
        everything = sum(idle)
        out = 0.0
        for i, pod in enumerate(self.pods):
            if pod.device is None or any(f < a for f, a in zip(free, self.asked[i], strict=True)):
                out += self.shares[i] * everything  # it cannot run here, or uses no device: all idle is lost to it
                continue
            usable = [self._room(ts, i) if ts[0][i] else 0 for ts in types]
            if sum(usable) < pod.device.count:
                out += self.shares[i] * everything
                continue
            out += self.shares[i] * sum(x for x, n in zip(idle, usable, strict=True) if n == 0)
        return out


def _taken(load: Load) -> tuple[tuple[object, int], ...]:
    """What a request took so far, as a key."""
    return (*sorted(load.n.items()), *sorted(load.cap.items()))


def _idle(ts: TypeState) -> float:
    _, caps, in_use, metered, free_n = ts
    if not metered:
        return float(free_n)
    if not caps:
        return float(free_n)
    if free_n == 0:
        return 0.0
    return min(max(0, c.value - u) / c.value if c.value else 0.0 for c, u in zip(caps, in_use, strict=True))


def _room(ts: TypeState, sub: s.SubRequest) -> int:
    """Devices of this type one allocation of ``sub`` could still take (0 or more)."""
    _, caps, in_use, metered, free_n = ts
    if free_n <= 0:
        return 0
    if not metered or not caps:
        return free_n
    used = consumable.consumed(sub.capacity, caps)
    if used is None:
        return 0
    left = consumable.room(used, caps, {c.name: u for c, u in zip(caps, in_use, strict=True)})
    return 1 if left is None or left >= 1 else 0
