"""Device bookkeeping for the greedy baseline: which devices are taken, and first-fit claims.

Upstream's allocator takes a pod's claims one by one, requests in order, the first
``firstAvailable`` alternative that fits, devices in order. ``Devices`` does the same on
device types: per pod, per claim, the first match value (if a matchAttribute binds it)
for which every request finds an alternative with enough free devices (at most one per
value of a distinctAttribute); free devices before ones freed by an eviction. A shared
claim is allocated with the first of its group's pods and pins the rest of the group to
the nodes its devices reach. A metered shareable device (consumable capacity) takes
shares while its capacities last, and charges its counters once while in use. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

from solver.core import snapshot as s
from solver.filters import consumable
from solver.problem import dra as dra_mod
from solver.problem.dra import AllocKey, MatchValue

Take = dict[AllocKey, int]  # devices taken per allocation key
INF = 1 << 40


class Load:
    """Devices spoken for: per type, and per (metered type, capacity) what they consume; and
    per type the devices taken with admin access, which use up nothing but their counters
    (the allocator checks those for them too). A share of a shareable device is a share,
    admin access or not (on the safe side)."""

    __slots__ = ("admin", "cap", "n")

    def __init__(self, n: Counter[int] | None = None, cap: Counter[tuple[int, str]] | None = None,
                 admin: Counter[int] | None = None) -> None:
        self.n: Counter[int] = Counter(n or {})
        self.cap: Counter[tuple[int, str]] = Counter(cap or {})
        self.admin: Counter[int] = Counter(admin or {})

    def copy(self) -> Load:
        return Load(self.n, self.cap, self.admin)

    def add(self, dtype: dra_mod.DeviceType, sub: s.SubRequest, k: int) -> None:
        if sub.admin_access and not dtype.shareable:  # a shared device's share: as any other
            self.admin[dtype.index] += k
            return
        self.n[dtype.index] += k
        if dtype.metered:
            for name, used in dtype.uses(sub):
                self.cap[dtype.index, name] += k * used


def _sub(slots: Sequence[dra_mod.Slot], key: AllocKey) -> s.SubRequest:
    return slots[key.slot].request.alternatives[key.alt]


class Devices:
    def __init__(self, dra: dra_mod.DraProblem, evicted: set[int], *, frees: bool = True,
                 best_fit: bool = False) -> None:
        self.dra = dra
        self.evicted = evicted  # the greedy state's set, shared (read only here)
        self.frees = frees  # False: an evicted holder's devices stay held (upstream 1.37)
        self.best_fit = best_fit  # a share on the metered device it fills best (else the first)
        # while set: a share goes on the metered device this ranks lowest (type, request, what the
        # request took so far), before best fit; the hint's fragmentation (solver.baseline.fragment)
        self.prefer: Callable[[int, s.SubRequest, Load], float] | None = None
        self.load = Load()  # what the committed placements take
        self.by_class: dict[int, Counter[int]] = defaultdict(Counter)  # type -> class -> devices
        self.placed: dict[tuple[int, s.NodeName], Counter[AllocKey]] = defaultdict(Counter)
        self.shared: dict[int, Take] = {}
        self.shared_reach: dict[int, frozenset[s.NodeName]] = {}
        # (counter set, counter) -> (type, amount) of the types consuming it (partitionable devices)
        self.consumers: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        self.local: dict[s.NodeName, list[int]] = defaultdict(list)  # node -> its node-local types
        for dtype in dra.types:
            if dtype.node is not None:
                self.local[dtype.node].append(dtype.index)
            if not dtype.shareable or dtype.metered:
                for set_key, counter, amount in dtype.consumes:
                    self.consumers[set_key, counter].append((dtype.index, amount))

    @property
    def used(self) -> Counter[int]:
        return self.load.n

    def _share_held(self, share: dra_mod.Share) -> bool:
        """An existing share still holds its capacity (a kept claim is never freed here)."""
        return not (self.frees and share.holder and not share.kept_by and all(u in self.evicted for u in share.holder))

    def in_use(self, t: int, extra: Load | None) -> bool:
        """A metered device some share uses (an existing one still held, or a new one)."""
        dtype = self.dra.types[t]
        return self.used[t] + (extra.n[t] if extra else 0) > 0 or any(self._share_held(sh) for sh in dtype.shares)

    def fullness(self, node: s.NodeName) -> float:
        """The share of ``node``'s own devices in use (0..1): devices taken or still held, and of
        a metered device the share of its capacities its shares use."""
        types = self.local.get(node)
        if not types:
            return 0.0
        used = total = 0.0
        for t in types:
            dtype = self.dra.types[t]
            total += dtype.size
            if dtype.metered:
                used += self._metered_use(t)
            elif not dtype.shareable:
                used += min(dtype.size, self.used[t] + (dtype.size if dtype.holder is not None and self.supply(t) == 0
                                                        else 0))
        return used / total if total else 0.0

    def _metered_use(self, t: int) -> float:
        dtype = self.dra.types[t]
        if not dtype.consumable:
            return float(self.in_use(t, None))
        in_use = self.capacity_in_use(t, None)
        return sum(min(1.0, in_use[c.name] / c.value) if c.value else 1.0 for c in dtype.consumable) / len(
            dtype.consumable)

    def capacity_in_use(self, t: int, extra: Load | None) -> Counter[str]:
        """What the device's shares consume of each capacity (existing ones still held, and new)."""
        dtype = self.dra.types[t]
        in_use: Counter[str] = Counter()
        for share in dtype.shares:
            if self._share_held(share):
                in_use.update(dict(share.used))
        for cap in dtype.consumable:
            in_use[cap.name] += self.load.cap[t, cap.name] + (extra.cap[t, cap.name] if extra else 0)
        return in_use

    def _left_after(self, t: int, sub: s.SubRequest, extra: Load | None) -> float:
        """The share of a metered device's capacity one more share for ``sub`` leaves (the
        least over its capacities; 1.0 for a device that is not metered by capacity)."""
        dtype = self.dra.types[t]
        if not dtype.metered or not dtype.consumable:
            return 1.0
        in_use, uses = self.capacity_in_use(t, extra), dict(dtype.uses(sub))
        return min(((c.value - in_use[c.name] - uses.get(c.name, 0)) / c.value for c in dtype.consumable if c.value),
                   default=1.0)

    def capacity_room(self, t: int, sub: s.SubRequest, extra: Load | None) -> int:
        """Shares of metered type ``t`` for ``sub`` its capacities still allow."""
        dtype = self.dra.types[t]
        room = consumable.room(dtype.uses(sub), dtype.consumable, self.capacity_in_use(t, extra))
        return INF if room is None else room

    def supply(self, t: int) -> int:
        dtype = self.dra.types[t]
        if dtype.shareable:
            return INF
        if dtype.holder is None:
            return dtype.size
        # a type some pending pod keeps (it names the holding claim) is never freed here:
        # simpler than undoing a reuse when that pod is placed later, and still valid
        if self.frees and dtype.holder and not dtype.kept_by and all(u in self.evicted for u in dtype.holder):
            return dtype.size
        return 0

    def free(self, t: int, extra: Load | None = None, sub: s.SubRequest | None = None) -> int:
        if sub is not None and sub.admin_access and not self.dra.types[t].shareable:  # in use or not
            return min(self.dra.types[t].size, self._counter_room(t, extra))
        room = min(self.supply(t) - self.used[t] - (extra.n[t] if extra else 0), self._counter_room(t, extra))
        if sub is not None and self.dra.types[t].metered:
            room = min(room, self.capacity_room(t, sub, extra))
        return room

    def _consumed(self, key: tuple[str, str], extra: Load | None) -> int:
        """What the taken devices, and the held ones not freed, consume of a counter."""
        total = 0
        for u, amount in self.consumers[key]:
            dtype = self.dra.types[u]
            if dtype.metered:  # charged once while in use
                total += amount * self.in_use(u, extra)
                continue
            n = self.used[u] + self.load.admin[u] + (extra.n[u] + extra.admin[u] if extra else 0)
            if dtype.holder is not None and self.supply(u) == 0:
                n += dtype.size  # still held by its claims
            total += amount * n
        return total

    def _counter_room(self, t: int, extra: Load | None) -> int:
        """Devices of type ``t`` the counters they consume still allow (INF without counters)."""
        dtype = self.dra.types[t]
        if not dtype.consumes or (dtype.shareable and not dtype.metered):
            return INF
        if dtype.metered and self.in_use(t, extra):
            return INF  # already charged: a further share does not charge them again
        room = min((self.dra.counters.get((k, c), 0) - self._consumed((k, c), extra)) // amount
                   for k, c, amount in dtype.consumes)
        return (INF if room >= 1 else 0) if dtype.metered else max(0, room)

    # ---- fitting --------------------------------------------------------------------
    def fit(self, slots: Sequence[dra_mod.Slot], node: s.NodeName | None, pods: int,
            start: Load | None = None) -> tuple[int, Take]:
        """How many of ``pods`` owners fit (up to ``pods``), and what they take together;
        ``start``: devices already spoken for (a shared claim about to be taken)."""
        total = start.copy() if start else Load()
        take: Counter[AllocKey] = Counter()
        done = 0
        for _ in range(pods):
            one = self._fit_one(slots, node, total)
            if one is None:
                break
            for key, n in one.items():
                take[key] += n
                total.add(self.dra.types[key.dtype], _sub(slots, key), n)
            done += 1
        return done, dict(take)

    def add_take(self, load: Load, slots: Sequence[dra_mod.Slot], take: Take) -> None:
        """Adds what ``take`` (for ``slots``) uses to ``load``."""
        for key, n in take.items():
            load.add(self.dra.types[key.dtype], _sub(slots, key), n)

    def _fit_one(self, slots: Sequence[dra_mod.Slot], node: s.NodeName | None, taken: Load) -> Take | None:
        out: Take = {}
        local = taken.copy()
        for claim in sorted({sl.claim for sl in slots}):
            members = [(j, sl) for j, sl in enumerate(slots) if sl.claim == claim]
            match = next((sl.match for _, sl in members if sl.match is not None), None)
            values: list[MatchValue] = [None]
            if match is not None:
                values = sorted({v for _, sl in members for a, v, _, _ in self.dra.options(sl, node)}, key=repr)
            for v in values:
                trial: Take = {}
                extra = local.copy()
                ok = True
                for j, sl in members:
                    got = None
                    for a, vv, types, need in self.dra.options(sl, node):
                        if sl.match is not None and vv != v:
                            continue
                        got = self._take(sl, a, types, need, extra)
                        if got is not None:
                            for t, n in got.items():
                                trial[AllocKey(j, a, vv, t)] = n
                                extra.add(self.dra.types[t], sl.request.alternatives[a], n)
                            break
                    if got is None:
                        ok = False
                        break
                if ok:
                    out.update(trial)
                    local = extra
                    break
            else:
                return None
        return out

    def _take(self, slot: dra_mod.Slot, a: int, types: tuple[int, ...], need: int,
              extra: Load) -> dict[int, int] | None:
        sub = slot.request.alternatives[a]
        if sub.all_mode:
            every = extra.copy()
            for t in types:
                if self.free(t, every, sub) < self.dra.types[t].size:
                    return None
                every.add(self.dra.types[t], sub, self.dra.types[t].size)  # the next type's counters see these
            return {t: self.dra.types[t].size for t in types}
        got: dict[int, int] = {}
        local = extra.copy()  # with what this request took so far (shared counters)
        left = need
        seen_values: set[MatchValue] = set()
        # free devices first, then devices an eviction freed; with best_fit, shares on the fullest
        # metered device that still takes them (whole devices stay whole); then by type index
        def order(t: int) -> tuple[bool, float, float, int]:
            left = self._left_after(t, sub, local) if self.best_fit else 1.0
            preferred = self.prefer(t, sub, local) if self.prefer is not None and self.dra.types[t].metered else 0.0
            return self.dra.types[t].holder is not None, preferred, left, t

        for t in sorted(types, key=order):
            if left == 0:
                break
            room = min(self.free(t, local, sub), self.dra.types[t].size)  # a request's devices are distinct
            if room <= 0:
                continue
            if slot.distinct is not None:
                value = self.dra.types[t].values[slot.distinct]
                if value in seen_values:
                    continue
                seen_values.add(value)
                room = min(room, 1)
            n = min(room, left)
            got[t] = n
            local.add(self.dra.types[t], sub, n)
            left -= n
        return got if left == 0 else None

    # ---- committing -----------------------------------------------------------------
    def commit(self, c: int, node: s.NodeName, take: Take, sign: int = 1) -> None:
        slots = self.dra.class_slots[c]
        for key, n in take.items():
            self.load.add(self.dra.types[key.dtype], _sub(slots, key), sign * n)
            if not _sub(slots, key).admin_access:  # who took a device a victim held (admin: none)
                self.by_class[key.dtype][c] += sign * n
            self.placed[c, node][key] += sign * n

    def commit_shared(self, i: int, take: Take | None, reach: frozenset[s.NodeName] | None, c: int) -> None:
        slots = self.dra.shared[i].slots
        if take is None:  # undo
            old = self.shared.pop(i)
            self.shared_reach.pop(i, None)
            for key, n in old.items():
                self.load.add(self.dra.types[key.dtype], _sub(slots, key), -n)
                if not _sub(slots, key).admin_access:
                    self.by_class[key.dtype][c] -= n
            return
        self.shared[i] = take
        assert reach is not None
        self.shared_reach[i] = reach
        for key, n in take.items():
            self.load.add(self.dra.types[key.dtype], _sub(slots, key), n)
            if not _sub(slots, key).admin_access:
                self.by_class[key.dtype][c] += n

    def feasible(self, types: Sequence[int]) -> bool:
        return all(self.used[t] <= self.supply(t) and self._capacity_kept(t) for t in types) and all(
            self._consumed(key, None) <= self.dra.counters.get(key, 0)
            for key in {(k, c) for t in types for k, c, _ in self.dra.types[t].consumes})

    def _capacity_kept(self, t: int) -> bool:
        """A metered device's shares, held and new, stay within its capacities."""
        dtype = self.dra.types[t]
        if not dtype.metered:
            return True
        in_use = self.capacity_in_use(t, None)
        return all(in_use[cap.name] <= cap.value for cap in dtype.consumable)

    def devices(self) -> dict[tuple[int, s.NodeName], Take]:
        return {owner: {key: n for key, n in took.items() if n > 0}
                for owner, took in self.placed.items() if any(n > 0 for n in took.values())}
