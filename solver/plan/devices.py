"""Aggregated device counts -> one DeviceAllocation per pod, claim and request.

The model (and the greedy) decide, per (class, node), how many devices of each type each
(slot, alternative, match value) takes. Here the pods bound there are dealt out: pods to
match values (one value per pod and claim), then to alternatives, then devices of each
type in key order, round-robin over the pods of an option so that a distinctAttribute
(at most one device per value and pod) holds whenever the counts allow it. Devices of a
type are interchangeable, so any dealing that respects the counts is a valid plan; the
verifier checks the result independently.

A device of a shareable type is one share: it gets a ``shareID`` (a UUID derived from the
owner, claim, request, device and the share's place, so one plan always writes the same)
and, when metered, the capacity it consumes (``solver.filters.consumable``).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace

from solver.core import snapshot as s
from solver.core.plan import Binding, DeviceAllocation, PlanDevice
from solver.filters import consumable
from solver.problem import dra as dra_mod
from solver.problem.build import Problem
from solver.problem.dra import Counts, MatchValue


class _Cursor:
    """Hands out devices of each type in key order; a shareable type hands them out again."""

    def __init__(self, dra: dra_mod.DraProblem) -> None:
        self.dra = dra
        self.next: dict[int, int] = defaultdict(int)
        self.admin: dict[int, int] = defaultdict(int)  # the same, for admin access

    def take(self, t: int, avoid: Sequence[PlanDevice] = (), *, admin: bool = False) -> tuple[s.Device, int]:
        """The next device of type ``t`` (of a shareable type, or with ``admin`` access, which
        takes devices whoever uses them, the next one not in ``avoid``: a request's devices are
        distinct), and how many times the plan took it before."""
        dtype = self.dra.types[t]
        turns = self.admin if admin else self.next
        i = turns[t]
        if not dtype.shareable and not admin:
            self.next[t] = i + 1
            return dtype.devices[i], 0
        held = {(p.driver, p.pool, p.device) for p in avoid}
        for k in range(dtype.size):  # the model leaves each owner a device it lacks
            dev = dtype.devices[(i + k) % dtype.size]
            if (dev.driver, dev.pool, dev.name) not in held:
                turns[t] = i + k + 1
                return dev, (i + k) // dtype.size
        turns[t] = i + 1
        return dtype.devices[i % dtype.size], i // dtype.size


_SHARES = uuid.UUID("6d1f0c2e-4b7a-4c55-9a53-0f6a2b1e9d40")  # the namespace of plan share IDs


def _device(dra: dra_mod.DraProblem, t: int, dev: s.Device, turn: int, owner: str, slot: dra_mod.Slot,
            sub: s.SubRequest) -> PlanDevice:
    dtype = dra.types[t]
    if not dev.allow_multiple:
        return PlanDevice(driver=dev.driver, pool=dev.pool, device=dev.name, admin_access=sub.admin_access)
    # a share of an allowMultipleAllocations device, also of one planned as an ordinary device
    # because a result without a shareID held it whole and the plan frees it (upstream gives
    # every new allocation of such a device a shareID, and its consumedCapacity)
    share = uuid.uuid5(_SHARES, f"{owner}|{slot.claim_entry}|{sub.name}|{dev.key}|{turn}")
    amounts = dtype.uses(sub) if dtype.metered else consumable.consumed(sub.capacity, dev.consumable) or ()
    used = tuple((name, consumable.text(v)) for name, v in amounts) if dev.consumable else ()
    return PlanDevice(driver=dev.driver, pool=dev.pool, device=dev.name, share_id=str(share), consumed=used,
                      admin_access=sub.admin_access)


def device_allocations(problem: Problem, counts_by_class_node: Mapping[tuple[int, s.NodeName], Counts],
                       shared: Mapping[int, Counts], bindings: Sequence[Binding],
                       node_pods: Mapping[tuple[int, s.NodeName], list[str]]) -> tuple[DeviceAllocation, ...]:
    dra = problem.dra
    if not dra.types:
        return ()
    cursor = _Cursor(dra)
    out: list[DeviceAllocation] = []
    for (c, node), pods in sorted(node_pods.items()):
        slots = dra.class_slots[c]
        if not slots:
            continue
        counts = counts_by_class_node.get((c, node), {})
        out.extend(_deal(dra, slots, counts, node, pods, cursor))
    bound = {b.pod for b in bindings}
    for i, counts in sorted(shared.items()):
        claim = dra.shared[i]
        if claim.pods:  # several pending pods name it: the first one bound owns the allocation
            owner, entry = next((p, e) for p, e in claim.pods if p in bound)
            out.extend(replace(alloc, claim=entry)
                       for alloc in _deal(dra, claim.slots, counts, None, [owner], cursor, single=True))
            continue
        out.extend(DeviceAllocation(pod_group=alloc.pod, claim=alloc.claim, request=alloc.request,
                                    devices=alloc.devices)
                   for alloc in _deal(dra, claim.slots, counts, None, [claim.group], cursor, single=True))
    return tuple(sorted(out, key=lambda d: (d.pod_group, d.pod, d.claim, d.request)))


def _need(dra: dra_mod.DraProblem, slot: dra_mod.Slot, a: int, node: s.NodeName | None) -> int:
    return dra.need(slot.request.alternatives[a], node, slot.eligible[a])


def _deal(dra: dra_mod.DraProblem, slots: Sequence[dra_mod.Slot], counts: Counts, node: s.NodeName | None,
          owners: list[str], cursor: _Cursor, single: bool = False) -> Iterator[DeviceAllocation]:
    """``single``: one owner (a shared claim) takes everything counted for its option."""
    # pods per (slot, alternative, value), from the device counts
    per_option: dict[tuple[int, int, MatchValue], dict[int, int]] = defaultdict(dict)
    for (j, a, v, t), n in counts.items():
        per_option[j, a, v][t] = n
    value_of: dict[tuple[int, str], MatchValue] = {}  # (claim, owner) -> match value
    for j, slot in enumerate(slots):
        options = sorted(((a, v) for (jj, a, v) in per_option if jj == j), key=repr)
        # owners to options: a claim's match value first, then the alternatives
        remaining = list(owners)
        queue: list[tuple[str, int, MatchValue]] = []
        for a, v in options:
            pods = 1 if single else sum(per_option[j, a, v].values()) // max(1, _need(dra, slot, a, node))
            if slot.match is not None:
                chosen = [o for o in remaining if value_of.get((slot.claim, o), v) == v][:pods]
            else:
                chosen = remaining[:pods]
            for o in chosen:
                remaining.remove(o)
                if slot.match is not None:
                    value_of[slot.claim, o] = v
                queue.append((o, a, v))
        for a, v in options:
            members = [o for o, aa, vv in queue if (aa, vv) == (a, v)]
            need = sum(per_option[j, a, v].values()) if single else _need(dra, slot, a, node)
            sub = slot.request.alternatives[a]
            got: dict[str, list[PlanDevice]] = {o: [] for o in members}
            k = 0
            # types of one distinct value next to each other, so round-robin keeps them apart
            for t, n in sorted(per_option[j, a, v].items(), key=lambda tn: (
                    repr(dra.types[tn[0]].values.get(slot.distinct)) if slot.distinct else "", tn[0])):
                for _ in range(n):
                    # round-robin over the option's pods, skipping pods already full
                    for _step in range(len(members)):
                        o = members[k % len(members)]
                        k += 1
                        if len(got[o]) < need:
                            dev, turn = cursor.take(t, got[o], admin=sub.admin_access)
                            got[o].append(_device(dra, t, dev, turn, o, slot, sub))
                            break
            for o in members:
                yield DeviceAllocation(pod=o, claim=slot.claim_entry, request=sub.name, devices=tuple(got[o]))
