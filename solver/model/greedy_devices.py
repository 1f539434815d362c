"""Device bookkeeping for the greedy baseline: which devices are taken, and first-fit claims.

Upstream's allocator takes a pod's claims one by one, requests in order, the first
``firstAvailable`` alternative that fits, devices in order. ``Devices`` does the same on
device types: per pod, per claim, the first match value (if a matchAttribute binds it)
for which every request finds an alternative with enough free devices (at most one per
value of a distinctAttribute); free devices before ones freed by an eviction. A shared
claim is allocated with the first of its group's pods and pins the rest of the group to
the nodes its devices reach. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from solver.model import dra as dra_mod
from solver.model import snapshot as s
from solver.model.dra import AllocKey, MatchValue

Take = dict[AllocKey, int]  # devices taken per allocation key
INF = 1 << 40


class Devices:
    def __init__(self, dra: dra_mod.DraProblem, evicted: set[int], *, frees: bool = True) -> None:
        self.dra = dra
        self.evicted = evicted  # the greedy state's set, shared (read only here)
        self.frees = frees  # False: an evicted holder's devices stay held (upstream 1.37)
        self.used: Counter[int] = Counter()
        self.by_class: dict[int, Counter[int]] = defaultdict(Counter)  # type -> class -> devices
        self.placed: dict[tuple[int, s.NodeName], Counter[AllocKey]] = defaultdict(Counter)
        self.shared: dict[int, Take] = {}
        self.shared_reach: dict[int, frozenset[s.NodeName]] = {}
        # (counter set, counter) -> (type, amount) of the types consuming it (partitionable devices)
        self.consumers: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        for dtype in dra.types:
            if not dtype.shareable:
                for set_key, counter, amount in dtype.consumes:
                    self.consumers[set_key, counter].append((dtype.index, amount))

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

    def free(self, t: int, extra: Counter[int] | None = None) -> int:
        return min(self.supply(t) - self.used[t] - (extra[t] if extra else 0), self._counter_room(t, extra))

    def _consumed(self, key: tuple[str, str], extra: Counter[int] | None) -> int:
        """What the taken devices, and the held ones not freed, consume of a counter."""
        total = 0
        for u, amount in self.consumers[key]:
            dtype = self.dra.types[u]
            n = self.used[u] + (extra[u] if extra else 0)
            if dtype.holder is not None and self.supply(u) == 0:
                n += dtype.size  # still held by its claims
            total += amount * n
        return total

    def _counter_room(self, t: int, extra: Counter[int] | None) -> int:
        """Devices of type ``t`` the counters they consume still allow (INF without counters)."""
        dtype = self.dra.types[t]
        if dtype.shareable or not dtype.consumes:
            return INF
        return max(0, min((self.dra.counters.get((k, c), 0) - self._consumed((k, c), extra)) // amount
                          for k, c, amount in dtype.consumes))

    # ---- fitting --------------------------------------------------------------------
    def fit(self, slots: Sequence[dra_mod.Slot], node: s.NodeName | None, pods: int,
            start: Counter[int] | None = None) -> tuple[int, Take]:
        """How many of ``pods`` owners fit (up to ``pods``), and what they take together;
        ``start``: devices per type already spoken for (a shared claim about to be taken)."""
        total: Counter[int] = Counter(start or {})
        take: Counter[AllocKey] = Counter()
        done = 0
        for _ in range(pods):
            one = self._fit_one(slots, node, total)
            if one is None:
                break
            for key, n in one.items():
                take[key] += n
                total[key.dtype] += n
            done += 1
        return done, dict(take)

    def _fit_one(self, slots: Sequence[dra_mod.Slot], node: s.NodeName | None, taken: Counter[int]) -> Take | None:
        out: Take = {}
        local: Counter[int] = Counter(taken)
        for claim in sorted({sl.claim for sl in slots}):
            members = [(j, sl) for j, sl in enumerate(slots) if sl.claim == claim]
            match = next((sl.match for _, sl in members if sl.match is not None), None)
            values: list[MatchValue] = [None]
            if match is not None:
                values = sorted({v for _, sl in members for a, v, _, _ in self.dra.options(sl, node)}, key=repr)
            for v in values:
                trial: Take = {}
                extra: Counter[int] = Counter(local)
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
                                extra[t] += n
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
              extra: Counter[int]) -> dict[int, int] | None:
        sub = slot.request.alternatives[a]
        if sub.all_mode:
            every = Counter(extra)
            for t in types:
                if self.free(t, every) < self.dra.types[t].size:
                    return None
                every[t] += self.dra.types[t].size  # the next type's counters see these taken
            return {t: self.dra.types[t].size for t in types}
        got: dict[int, int] = {}
        local = Counter(extra)  # with what this request took so far (shared counters)
        left = need
        seen_values: set[MatchValue] = set()
        # free devices first, then devices an eviction freed; then by type index
        for t in sorted(types, key=lambda t: (self.dra.types[t].holder is not None, t)):
            if left == 0:
                break
            room = self.free(t, local)
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
            local[t] += n
            left -= n
        return got if left == 0 else None

    # ---- committing -----------------------------------------------------------------
    def commit(self, c: int, node: s.NodeName, take: Take, sign: int = 1) -> None:
        for key, n in take.items():
            self.used[key.dtype] += sign * n
            self.by_class[key.dtype][c] += sign * n
            self.placed[c, node][key] += sign * n

    def commit_shared(self, i: int, take: Take | None, reach: frozenset[s.NodeName] | None, c: int) -> None:
        if take is None:  # undo
            old = self.shared.pop(i)
            self.shared_reach.pop(i, None)
            for key, n in old.items():
                self.used[key.dtype] -= n
                self.by_class[key.dtype][c] -= n
            return
        self.shared[i] = take
        assert reach is not None
        self.shared_reach[i] = reach
        for key, n in take.items():
            self.used[key.dtype] += n
            self.by_class[key.dtype][c] += n

    def feasible(self, types: Sequence[int]) -> bool:
        return all(self.used[t] <= self.supply(t) for t in types) and all(
            self._consumed(key, None) <= self.dra.counters.get(key, 0)
            for key in {(k, c) for t in types for k, c, _ in self.dra.types[t].consumes})

    def devices(self) -> dict[tuple[int, s.NodeName], Take]:
        return {owner: {key: n for key, n in took.items() if n > 0}
                for owner, took in self.placed.items() if any(n > 0 for n in took.values())}
