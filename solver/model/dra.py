"""DRA in the placement problem: device types, the claims each pod class needs, holders.

Aggregation (docs/design.md "Modelling at scale"): devices are grouped into *types*. Two
devices share a type when they are reached from the same nodes (one node for a node-local
pool, the node set of a network-attached pool), are held the same way (free; held for
good; or held by claims that go free when a given set of victim units is evicted), and
give the same answer to every question the model asks of a device: each (DeviceClass +
request selectors + tolerations) test, the value of every attribute a claim constraint
names, and ``allowMultipleAllocations``. Eight identical GPUs on a node are one type
with a count of 8, however they are named; a per-device attribute (a UUID) splits them
only when a constraint names it.

Per pod class, the claims still to allocate are *slots*: one per request of each per-pod
claim, each with its alternatives (``exactly`` or ``firstAvailable``) and the types each
alternative may take. A PodGroup's shared claim is allocated once for the group
(``SharedClaim``). Claims already allocated need no devices but pin their pods to the
nodes the allocation reaches.

Decisions where docs/design.md is silent:

- A held device goes free only when every consumer in its claim's ``reservedFor`` is
  evicted (all running pods of a reserved PodGroup); an allocated claim nobody reserves,
  one reserved by a pod that is not a victim or by another kind of consumer, stays held.
- A ResourceClaim named by several pending pods outside their PodGroup's
  ``spec.resourceClaims`` is an input error (one allocation shared that way is not modelled).
- ``allocationMode: All`` takes every device the alternative selects that the pod's node
  reaches, and fails when there is none; a shareable device (``allowMultipleAllocations``)
  is never used up (consumable capacity is not modelled).
- A selector that fails at run time on any device (a missing attribute name) makes that
  request unsatisfiable: upstream's allocator aborts the pod's allocation on such an error.
- ``distinctAttribute`` is modelled for constraints over one request; a claim may have
  at most one ``matchAttribute`` constraint (both are checked by ``solver.verify``).

Pure: no I/O, no solver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solver.model import cel, selectors
from solver.model import snapshot as s
from solver.model.errors import SnapshotInvalidError

Holder = tuple[int, ...] | None  # None: free; (): held for good; (u, ...): free once all are evicted


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceType:
    index: int
    node: s.NodeName | None  # node-local pool; None: network-attached
    reach: frozenset[s.NodeName]  # nodes from which its devices are reachable
    devices: tuple[s.Device, ...]  # sorted by key; decode hands them out in this order
    holder: Holder
    shareable: bool  # allowMultipleAllocations: never used up
    kept_by: tuple[int, ...] = ()  # pending classes naming a claim that holds these devices:
    # placing any of them keeps the claim allocated, so its devices are not freed
    values: Mapping[str, s.AttributeValue | None]  # constraint attribute -> value

    @property
    def size(self) -> int:
        return len(self.devices)


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """One request of one claim a pod (or a group, for a shared claim) must get devices for."""

    claim_entry: str  # the pod's (or PodGroup's) claim entry name
    claim: int  # index of the claim among the owner's claims (slots of one claim share it)
    request: s.Request
    eligible: tuple[frozenset[int], ...]  # per alternative: the types it may take (any node)
    selected: tuple[frozenset[int], ...]  # per alternative: the types its selectors pick (attributes aside)
    match: str | None  # matchAttribute covering this request
    distinct: str | None  # distinctAttribute covering this request

    def values(self, dra: DraProblem, alt: int) -> list[s.AttributeValue | None]:
        """The matchAttribute values this alternative can take ([None] without one)."""
        if self.match is None:
            return [None]
        return sorted({dra.types[t].values[self.match] for t in self.eligible[alt]}, key=repr)  # type: ignore[misc]


@dataclass(frozen=True, slots=True, kw_only=True)
class SharedClaim:
    index: int
    group: s.GroupKey
    entry: str
    claim: s.Claim
    slots: tuple[Slot, ...]
    users: frozenset[int] = frozenset()  # the classes whose pods name it (not every class of the group)


@dataclass(slots=True)
class DraProblem:
    types: list[DeviceType] = field(default_factory=list)
    node_types: dict[s.NodeName, list[int]] = field(default_factory=dict)  # node-local types per node
    network_types: list[int] = field(default_factory=list)
    class_slots: list[tuple[Slot, ...]] = field(default_factory=list)  # per class
    shared: list[SharedClaim] = field(default_factory=list)
    shared_of_class: dict[int, list[int]] = field(default_factory=dict)  # class -> shared claims it uses
    pinned: dict[int, list[frozenset[s.NodeName]]] = field(default_factory=dict)  # class -> allowed node sets
    unit_types: dict[int, dict[int, int]] = field(default_factory=dict)  # unit -> type -> devices it holds

    @property
    def active(self) -> bool:
        """Devices, or claims that need some (which then cannot be met without devices)."""
        return bool(self.types) or any(self.class_slots) or bool(self.shared) or bool(self.pinned)

    def reachable(self, node: s.NodeName, types: frozenset[int]) -> list[int]:
        return [t for t in sorted(types) if node in self.types[t].reach]

    def need(self, sub: s.SubRequest, node: s.NodeName | None, eligible: frozenset[int]) -> int:
        """Devices one allocation of ``sub`` takes; All mode: every reachable eligible device."""
        if not sub.all_mode:
            return sub.count
        if node is None:
            return sum(self.types[t].size for t in eligible)
        return sum(self.types[t].size for t in eligible if node in self.types[t].reach)

    def options(self, slot: Slot, node: s.NodeName | None) -> list[tuple[int, object, list[int], int]]:
        """(alternative, value, types, need) a pod on ``node`` may use for ``slot``; node None: any node."""
        out = []
        for a, sub in enumerate(slot.request.alternatives):
            eligible = slot.eligible[a]
            reach = sorted(eligible) if node is None else self.reachable(node, eligible)
            need = self.need(sub, node, eligible)
            if need == 0 or not reach:
                continue
            if sub.all_mode and not self._all_possible(slot, a, node):
                continue
            for v in slot.values(self, a):
                types = [t for t in reach if slot.match is None or self.types[t].values[slot.match] == v]
                if not types:
                    continue
                if sub.all_mode and sum(self.types[t].size for t in types) != need:
                    continue  # All needs every reachable device, and they must share the value
                if not any(self.types[t].shareable for t in types) and sum(self.types[t].size for t in types) < need:
                    continue
                out.append((a, v, types, need))
        return out

    def all_reach(self, slot: Slot, a: int, types: Sequence[int]) -> frozenset[s.NodeName]:
        """Nodes from which ``types`` are exactly the eligible devices of All-mode alternative
        ``a`` they reach: where every sharer of an All allocation of ``types`` may run."""
        chosen = set(types)
        reach = frozenset.intersection(*(self.types[t].reach for t in chosen))
        for t in slot.eligible[a]:
            if t not in chosen:
                reach -= self.types[t].reach
        return reach

    def _all_possible(self, slot: Slot, a: int, node: s.NodeName | None) -> bool:
        """All mode takes every selected device the node reaches: each must carry the
        constrained attribute, and for distinctAttribute their values must all differ."""
        attrs = [x for x in (slot.match, slot.distinct) if x]
        if not attrs:
            return True
        picked = [self.types[t] for t in slot.selected[a] if node is None or node in self.types[t].reach]
        if any(t.values.get(x) is None for t in picked for x in attrs):
            return False
        if slot.distinct:
            values = [t.values[slot.distinct] for t in picked]
            return all(t.size == 1 for t in picked) and len(set(values)) == len(values)
        return True

    def most_on(self, slots: Sequence[Slot], node: s.NodeName) -> int | None:
        """An upper bound on how many owners of these slots fit on ``node`` by devices
        (None: no bound from devices), counting every device not held for good."""
        most: int | None = None
        for slot in slots:
            best = 0
            for alt, sub in enumerate(slot.request.alternatives):
                types = self.reachable(node, slot.eligible[alt])
                need = self.need(sub, node, slot.eligible[alt])
                if need == 0 or not types:
                    continue
                if any(self.types[t].shareable for t in types):
                    return None if most is None else most
                avail = sum(self.types[t].size for t in types if self.types[t].holder != ())
                # owners may mix alternatives (one takes its first entry, the next its second):
                # each alternative's owners are bounded on their own, the bound is the sum
                best += avail // need
            most = best if most is None else min(most, best)
        return most


def analyse(snapshot: s.ClusterSnapshot, classes: Sequence[object], units: Sequence[object],
            groups: Mapping[s.GroupKey, s.Group], *, free_on_eviction: bool = True) -> DraProblem:
    """The DRA view of the problem. ``classes`` and ``units`` are problem.PodClass and
    problem.VictimUnit (not imported here to keep the dependency one way). Without
    ``free_on_eviction`` every allocated device stays held whoever is evicted, as upstream
    1.37 plans (its DRA plugin has no preemption support, KEP-5690)."""
    dra_state = snapshot.dra
    out = DraProblem(class_slots=[() for _ in classes])
    if not dra_state.pod_claims and not dra_state.devices:
        return out
    nodes = snapshot.nodes
    pending_pods = {p.key for p in snapshot.pods if p.node is None}
    unit_of_pod = {p.key: u.index for u in units for p in u.members}  # type: ignore[attr-defined]
    protected = {u.index for u in units if u.protected}  # type: ignore[attr-defined]
    running_of_group: dict[str, list[str]] = defaultdict(list)
    for pod in snapshot.pods:
        if pod.node is not None and pod.group is not None:
            running_of_group[pod.group].append(pod.key)

    # ---- what is held, and by whom ------------------------------------------------
    holder_of: dict[s.DeviceKey, Holder] = {}
    for claim in dra_state.claims.values():
        if claim.allocation is None:
            continue
        consumers = list(claim.reserved_pods) + [p for g in claim.reserved_groups for p in running_of_group.get(g, ())]
        if free_on_eviction and consumers and not claim.reserved_other and \
                all(p in unit_of_pod and unit_of_pod[p] not in protected for p in consumers):
            holder: Holder = tuple(sorted({unit_of_pod[p] for p in consumers}))
        else:
            holder = ()
        for dev in claim.allocation:
            prev = holder_of.get(dev.device)
            holder_of[dev.device] = holder if prev is None else (() if prev == () or holder == () else
                                                                tuple(sorted(set(prev) | set(holder or ()))))

    # a pending pod that names an allocated claim keeps it allocated once placed
    kept_of: dict[s.DeviceKey, set[int]] = defaultdict(set)
    for cls in classes:
        for pc in dra_state.pod_claims.get(cls.pods[0].key, ()):  # type: ignore[attr-defined]
            for dev in dra_state.claims[pc.claim].allocation or ():
                kept_of[dev.device].add(cls.index)  # type: ignore[attr-defined]

    # ---- slots: per class and per shared claim ------------------------------------
    questions: list[s.SubRequest] = []
    constraint_attrs: set[str] = set()
    raw_class_slots: list[list[tuple[str, int, s.Claim]]] = []
    users: dict[s.ClaimKey, list[str]] = defaultdict(list)  # unallocated per-pod claim -> pending pods
    for pod_key, pcs in dra_state.pod_claims.items():
        for pc in pcs:
            if pc.shared_by is None and dra_state.claims[pc.claim].allocation is None:
                users[pc.claim].append(pod_key)
    for key, pods in users.items():
        pending = [p for p in pods if p in pending_pods]
        if len(pending) > 1:
            raise SnapshotInvalidError(f"ResourceClaim/{key}", "metadata.name",
                                       f"used by several pending pods ({', '.join(sorted(pending))}) outside a "
                                       "PodGroup's spec.resourceClaims: one allocation shared that way is not modelled")
    shared_raw: dict[tuple[s.GroupKey, str], s.Claim] = {}
    shared_users: dict[tuple[s.GroupKey, str], set[int]] = defaultdict(set)
    for cls in classes:
        rep = cls.pods[0]  # type: ignore[attr-defined]
        own: list[tuple[str, int, s.Claim]] = []
        for pc in dra_state.pod_claims.get(rep.key, ()):
            claim = dra_state.claims[pc.claim]
            if claim.allocation is not None:
                out.pinned.setdefault(cls.index, []).append(  # type: ignore[attr-defined]
                    _allocation_reach(claim, dra_state, nodes))
                continue
            if pc.shared_by is not None:
                shared_raw.setdefault((s.GroupKey(pc.shared_by), pc.name), claim)
                shared_users[s.GroupKey(pc.shared_by), pc.name].add(cls.index)  # type: ignore[attr-defined]
                continue
            own.append((pc.name, len(own), claim))
        raw_class_slots.append(own)
        for _, _, claim in own:
            _collect(claim, questions, constraint_attrs)
    for claim in shared_raw.values():
        _collect(claim, questions, constraint_attrs)
    unique_questions = list(dict.fromkeys(questions))

    # ---- device types ---------------------------------------------------------------
    reach_cache: dict[tuple[object, ...], frozenset[s.NodeName]] = {}
    by_key: dict[tuple[object, ...], list[s.Device]] = defaultdict(list)
    answers_cache: dict[tuple[object, ...], tuple[bool | None, ...]] = {}
    for dev in dra_state.devices:
        if dev.node is not None:
            reach = frozenset((dev.node,))
        else:
            rk = (dev.node_selector, dev.all_nodes)
            if rk not in reach_cache:
                reach_cache[rk] = frozenset(
                    n.name for n in nodes
                    if dev.all_nodes or any(selectors.term_matches(term, n) for term in dev.node_selector))
            reach = reach_cache[rk]
        sig = dev.signature()
        if sig not in answers_cache:
            answers_cache[sig] = tuple(_answers(dev, q, dra_state) for q in unique_questions)
        values = tuple((a, attribute(dev, a)) for a in sorted(constraint_attrs))
        holder = None if dev.allow_multiple else holder_of.get(dev.key)
        kept = tuple(sorted(kept_of.get(dev.key, ()))) if holder else ()
        key = (dev.node, reach, holder, kept, dev.allow_multiple, answers_cache[sig], values)
        by_key[key].append(dev)
    answers_of_type: list[tuple[bool | None, ...]] = []
    for key in sorted(by_key, key=lambda k: (k[0] or "", sorted(k[1])[:1], repr(k[2:]))):
        devs = tuple(sorted(by_key[key], key=lambda d: d.key))
        node, reach, holder, kept, shareable, answers, values = key
        t = DeviceType(index=len(out.types), node=node, reach=reach, devices=devs, holder=holder,  # type: ignore[arg-type]
                       kept_by=kept, shareable=bool(shareable), values=dict(values))  # type: ignore[arg-type]
        out.types.append(t)
        answers_of_type.append(answers)  # type: ignore[arg-type]
        if node is None:
            out.network_types.append(t.index)
        else:
            out.node_types.setdefault(node, []).append(t.index)  # type: ignore[arg-type]
        if holder:
            for u in holder:  # type: ignore[union-attr]
                out.unit_types.setdefault(u, {})[t.index] = out.unit_types.get(u, {}).get(t.index, 0) + t.size
    q_index = {q: i for i, q in enumerate(unique_questions)}

    def slots_of(entry: str, claim_no: int, claim: s.Claim) -> list[Slot]:
        match, distinct = _constraints(claim)
        made = []
        for req in claim.spec.requests:
            m = match[1] if match and (not match[0] or req.name in match[0]) else None
            d = next((a for reqs, a in distinct if not reqs or req.name in reqs), None)
            eligible, selected = [], []
            for sub in req.alternatives:
                qi = q_index[sub]
                if any(answers[qi] is None for answers in answers_of_type):
                    eligible.append(frozenset())  # upstream aborts the allocation: nothing fits
                    selected.append(frozenset())
                    continue
                selected.append(frozenset(t.index for t in out.types if answers_of_type[t.index][qi]))
                types = {t.index for t in out.types if answers_of_type[t.index][qi]
                         and (m is None or t.values.get(m) is not None)
                         and (d is None or t.values.get(d) is not None)}
                eligible.append(frozenset(types))
            made.append(Slot(claim_entry=entry, claim=claim_no, request=req, eligible=tuple(eligible),
                             selected=tuple(selected), match=m, distinct=d))
        return made

    out.class_slots = [tuple(x for entry, k, claim in own for x in slots_of(entry, k, claim))
                       for own in raw_class_slots]
    for (group, entry), claim in sorted(shared_raw.items()):
        index = len(out.shared)
        users = frozenset(shared_users[group, entry])
        out.shared.append(SharedClaim(index=index, group=group, entry=entry, claim=claim,
                                      slots=tuple(slots_of(entry, 0, claim)), users=users))
        for c in sorted(users):
            out.shared_of_class.setdefault(c, []).append(index)
    return out


def attribute(dev: s.Device, qualified: str) -> s.AttributeValue | None:
    domain, _, name = qualified.rpartition("/")
    return dev.attributes.get(domain or dev.driver, {}).get(name)


def _collect(claim: s.Claim, questions: list[s.SubRequest], attrs: set[str]) -> None:
    for req in claim.spec.requests:
        questions.extend(req.alternatives)
    for con in claim.spec.constraints:
        for a in (con.match_attribute, con.distinct_attribute):
            if a:
                attrs.add(a)


def _constraints(claim: s.Claim) -> tuple[tuple[tuple[str, ...], str] | None, list[tuple[tuple[str, ...], str]]]:
    matches = [(c.requests, c.match_attribute) for c in claim.spec.constraints if c.match_attribute]
    distinct = [(c.requests, c.distinct_attribute) for c in claim.spec.constraints if c.distinct_attribute]
    if len(matches) > 1:
        raise SnapshotInvalidError(f"ResourceClaim/{claim.key}", "spec.devices.constraints",
                                   "more than one matchAttribute constraint in a claim is not modelled")
    for reqs, _ in distinct:
        if len(reqs) != 1 and len(claim.spec.requests) != 1:
            raise SnapshotInvalidError(f"ResourceClaim/{claim.key}", "spec.devices.constraints",
                                       "distinctAttribute over more than one request is not modelled")
    return (matches[0] if matches else None), distinct  # type: ignore[return-value]


def _answers(dev: s.Device, sub: s.SubRequest, dra_state: s.DraState) -> bool | None:
    """Does ``sub`` select ``dev``? None: a selector failed at run time on it."""
    dclass = dra_state.classes.get(sub.device_class)
    if dclass is None:
        return False
    if any(t.effect in ("NoSchedule", "NoExecute") and not any(selectors.tolerates(tol, t) for tol in sub.tolerations)
           for t in dev.taints):
        return False
    try:
        return all(cel.selects(e, dev) for e in (*dclass.selectors, *sub.selectors))
    except cel.CelRuntimeError:
        return None


def _allocation_reach(claim: s.Claim, dra_state: s.DraState, nodes: Sequence[s.Node]) -> frozenset[s.NodeName]:
    """Nodes from which an existing allocation is usable: its nodeSelector and every device's reach."""
    devices = dra_state.device_by_key()
    out = []
    for n in nodes:
        if claim.allocation_nodes and not any(selectors.term_matches(t, n) for t in claim.allocation_nodes):
            continue
        ok = True
        for a in claim.allocation or ():
            dev = devices.get(a.device)
            if dev is None:
                continue
            if dev.node is not None and dev.node != n.name:
                ok = False
            elif dev.node is None and not dev.all_nodes and not any(
                    selectors.term_matches(t, n) for t in dev.node_selector):
                ok = False
        if ok:
            out.append(n.name)
    return frozenset(out)
