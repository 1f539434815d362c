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
- A ResourceClaim still to allocate that several pending pods name outside their
  PodGroup's ``spec.resourceClaims`` is allocated once, like a PodGroup's claim
  (``pod_shared``): upstream allocates it for the first pod it schedules and pins the others
  to that allocation. The plan gives it to the first of them it binds, by name.
- An ``adminAccess`` request (DRAAdminAccess, GA) takes devices whether in use or not,
  distinct within its claim, and uses nothing up (constraints/devices.py leaves it out of
  supply and capacity, and it never justifies an eviction); its counters are charged, as
  upstream's allocator checks them for it too (on the safe side: upstream does not keep
  them charged). An existing admin result holds nothing.
- ``allocationMode: All`` takes every device the alternative selects that the pod's node
  reaches, and fails when there is none. A PodGroup's shared claim is allocated once, on the
  node of one of its pods (its All set there); the others only reach those devices.
- A shareable device (``allowMultipleAllocations``) with capacities or counters is a type
  of its own (*metered*): each allocation uses up what ``solver.filters.consumable`` says, its
  existing shares (results with a ``shareID``) hold theirs until their claims' consumers
  are evicted, and its counters are charged once while any share uses it. One with neither
  is never used up. One holding a result without a ``shareID`` (allocated with the gate
  off) is in use whole, as upstream counts it, and is planned as an ordinary device.
- A selector that fails at run time on a device (a missing attribute name) aborts the pod's
  scheduling wherever upstream's allocator meets it, before any later firstAvailable entry
  and whatever the device's taints (``_answers`` asks the selectors first): a pod that may
  reach such a device from a node past its other filters is placed nowhere (``Slot.broken``).
- ``allocationMode: All`` must take every selected device it reaches: one with a taint the
  request does not tolerate (``Slot.tainted``) fails it there.
- ``distinctAttribute`` is modelled for constraints over one request; a claim may have
  at most one ``matchAttribute`` constraint (both are checked by ``solver.verify``).

Pure: no I/O, no solver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from solver import cel
from solver.core import snapshot as s
from solver.core.errors import SnapshotInvalidError
from solver.core.stopping import checkpoint
from solver.filters import selectors
from solver.filters.consumable import Used, consumed
from solver.problem.workloads import PodClass, VictimUnit, may_preempt

Holder = tuple[int, ...] | None  # None: free; (): held for good; (u, ...): free once all are evicted


MatchValue = s.AttributeValue | None  # a matchAttribute value; None: the slot has no matchAttribute


class Share(NamedTuple):
    """An existing share of a metered device: freed with its holder, unless a pending class
    naming its claim is placed (``kept_by``)."""

    holder: tuple[int, ...]
    kept_by: tuple[int, ...]
    used: Used


class Option(NamedTuple):
    """One way to meet a slot: alternative ``alt`` with matchAttribute value ``value``, taking
    ``need`` devices from ``types``."""

    alt: int
    value: MatchValue
    types: tuple[int, ...]
    need: int


class AllocKey(NamedTuple):
    """What an allocation count is of: devices of type ``dtype`` taken for slot ``slot`` through
    alternative ``alt`` with match value ``value``."""

    slot: int
    alt: int
    value: MatchValue
    dtype: int


Counts = Mapping[AllocKey, int]  # devices taken per allocation key, only > 0


class SharedOption(NamedTuple):
    """One option of a shared claim's slot: alternative ``alt`` with match value ``value``, the
    ``option``-th of the slot's options (All mode repeats (alt, value) once per reachable set)."""

    slot: int
    alt: int
    value: MatchValue
    option: int


TAINTED = "tainted"  # an answer: selected, but a taint the request does not tolerate
Answer = bool | str | None  # True, False, TAINTED, or None (a selector failed at run time)

@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceType:
    index: int
    node: s.NodeName | None  # node-local pool; None: network-attached
    reach: frozenset[s.NodeName]  # nodes from which its devices are reachable
    devices: tuple[s.Device, ...]  # sorted by key; decode hands them out in this order
    holder: Holder
    shareable: bool  # allowMultipleAllocations: shared, never used up unless metered
    kept_by: tuple[int, ...] = ()  # pending classes naming a claim that holds these devices:
    # placing any of them keeps the claim allocated, so its devices are not freed
    values: Mapping[str, MatchValue]  # constraint attribute -> value
    # DRAPartitionableDevices: (counter set, counter, amount) each of its devices consumes
    consumes: tuple[tuple[str, str, int], ...] = ()
    # DRAConsumableCapacity: a metered shareable type is one device; its capacities and
    # the shares its existing allocations hold (holder, pending classes keeping the claim, use)
    metered: bool = False
    consumable: tuple[s.Consumable, ...] = ()
    shares: tuple[Share, ...] = ()

    @property
    def size(self) -> int:
        return len(self.devices)

    def uses(self, sub: s.SubRequest) -> Used:
        """What one allocation of this (metered) type for ``sub`` consumes."""
        return consumed(sub.capacity, self.consumable) or ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """One request of one claim a pod (or a group, for a shared claim) must get devices for."""

    claim_entry: str  # the pod's (or PodGroup's) claim entry name
    claim: int  # index of the claim among the owner's claims (slots of one claim share it)
    request: s.Request
    eligible: tuple[frozenset[int], ...]  # per alternative: the types it may take (any node)
    selected: tuple[frozenset[int], ...]  # per alternative: the types its selectors pick (attributes aside)
    # per alternative: the selected types with a taint it does not tolerate (All mode fails
    # where it reaches one: upstream's allocateDevice must take every selected device)
    tainted: tuple[frozenset[int], ...] = ()
    # per alternative: the nodes that reach a device on which a selector fails at run time.
    # Upstream's allocator aborts the pod's scheduling on such an error wherever it meets it:
    # a class none of whose nodes past the other filters reaches one is unaffected
    # (problem.py ``_dra_aborts``); one that may reach one is placed nowhere. A device no
    # plan frees is never met: the allocator skips devices in use before their selectors
    broken: tuple[frozenset[s.NodeName], ...] = ()
    match: str | None  # matchAttribute covering this request
    distinct: str | None  # distinctAttribute covering this request

    def values(self, dra: DraProblem, alt: int) -> list[MatchValue]:
        """The matchAttribute values this alternative can take ([None] without one)."""
        match = self.match
        if match is None:
            return [None]
        return sorted({dra.types[t].values[match] for t in self.eligible[alt]}, key=repr)


@dataclass(frozen=True, slots=True, kw_only=True)
class SharedClaim:
    index: int
    group: s.GroupKey
    entry: str
    claim: s.Claim
    slots: tuple[Slot, ...]
    users: frozenset[int] = frozenset()  # the classes whose pods name it (not every class of the group)
    # a ResourceClaim several pending pods name outside a PodGroup (``pod_shared``): those pods
    # with their entry names, sorted; the first the plan binds owns its allocation. () for a
    # PodGroup's claim
    pods: tuple[tuple[s.PodKey, str], ...] = ()


# status.reservedFor holds at most this many consumers (resourceapi.ResourceClaimReservedForMaxSize)
RESERVED_MAX = 256


@dataclass(frozen=True, slots=True)
class ReserveCap:
    """A claim a pod joins by binding (allocated, or several pending pods name it) whose
    reservedFor may not take every pending pod naming it: at most ``room`` more of the pods
    of ``classes`` bind (once it is full, upstream's PreBind fails to add the next: the API
    server refuses more than 256)."""

    claim: s.ClaimKey
    room: int
    classes: frozenset[int]


@dataclass(frozen=True, slots=True, kw_only=True)
class DraProblem:
    types: tuple[DeviceType, ...] = ()
    class_slots: tuple[tuple[Slot, ...], ...] = ()  # per class
    shared: tuple[SharedClaim, ...] = ()
    pod_shared: frozenset[s.ClaimKey] = frozenset()  # the claims several pending pods name (pod_shared)
    reserve_caps: tuple[ReserveCap, ...] = ()
    in_use_for_good: frozenset[s.DeviceKey] = frozenset()  # devices of the types _kept_for_good
    shared_of_class: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # class -> shared claims it uses
    pinned: Mapping[int, tuple[frozenset[s.NodeName], ...]] = field(default_factory=dict)  # class -> allowed node sets
    unit_types: Mapping[int, Mapping[int, int]] = field(default_factory=dict)  # unit -> type -> devices it holds
    # (counter set, counter) -> its amount, for the counters some type consumes
    counters: Mapping[tuple[str, str], int] = field(default_factory=dict)
    # per expected pod (PlanOptions.expected), the slot of its device request; () without one
    expected_slots: tuple[tuple[Slot, ...], ...] = ()
    # devices, or claims that need some (which then cannot be met without devices); asked per
    # class and node tried, so worked out once from the fields above
    active: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        active = bool(self.types) or any(self.class_slots) or bool(self.shared) or bool(self.pinned)
        object.__setattr__(self, "active", active)

    def reachable(self, node: s.NodeName, types: frozenset[int]) -> list[int]:
        return [t for t in sorted(types) if node in self.types[t].reach]

    def need(self, sub: s.SubRequest, node: s.NodeName | None, eligible: frozenset[int]) -> int:
        """Devices one allocation of ``sub`` takes; All mode: every reachable eligible device."""
        if not sub.all_mode:
            return sub.count
        if node is None:
            return sum(self.types[t].size for t in eligible)
        return sum(self.types[t].size for t in eligible if node in self.types[t].reach)

    def options(self, slot: Slot, node: s.NodeName | None) -> list[Option]:
        """The options a pod on ``node`` may use for ``slot``; node None: any node."""
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
                types = tuple(t for t in reach if slot.match is None or self.types[t].values[slot.match] == v)
                if not types:
                    continue
                if sub.all_mode and sum(self.types[t].size for t in types) != need:
                    continue  # All needs every reachable device, and they must share the value
                if sum(self.types[t].size for t in types) < need:
                    continue  # distinct devices, shareable or not (the allocator moves on after each)
                out.append(Option(a, v, types, need))
        return out

    def all_reach(self, slot: Slot, a: int, types: Iterable[int]) -> frozenset[s.NodeName]:
        """Nodes from which ``types`` are exactly the eligible devices of All-mode alternative
        ``a`` they reach: where a shared claim's All allocation of ``types`` may be made (its
        other sharers need only reach ``types``: upstream allocates a shared claim for the
        first pod and pins the next ones to that allocation)."""
        chosen = set(types)
        reach = frozenset.intersection(*(self.types[t].reach for t in chosen))
        for t in slot.eligible[a] | slot.tainted[a]:
            if t not in chosen:
                reach -= self.types[t].reach
        return reach

    def _all_possible(self, slot: Slot, a: int, node: s.NodeName | None) -> bool:
        """All mode takes every selected device the node reaches: each must carry the
        constrained attribute, and for distinctAttribute their values must all differ."""
        if node is not None and any(node in self.types[t].reach for t in slot.tainted[a]):
            return False  # a device it must take has a taint it does not tolerate
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
                if sub.admin_access or any(self.types[t].shareable for t in types):
                    return None if most is None else most  # taken whether in use or not
                avail = sum(self.types[t].size for t in types if self.types[t].holder != ())
                # owners may mix alternatives (one takes its first entry, the next its second):
                # each alternative's owners are bounded on their own, the bound is the sum
                best += avail // need
            most = best if most is None else min(most, best)
        return most


# ---- analysis: snapshot -> DraProblem ---------------------------------------------------

SharedName = tuple[s.GroupKey, str]  # (PodGroup, its claim entry name); a pod-shared claim's: pod_shared_name


def _reserve_caps(dra_state: s.DraState, classes: Sequence[PodClass],
                  several: Mapping[s.ClaimKey, object]) -> tuple[ReserveCap, ...]:
    """The claims whose reservedFor could overflow (``ReserveCap``): each binding of a pod that
    names a claim already allocated, or one several pending pods name, adds the pod to it
    (PreBind's ``bindClaim``), unless the claim is reserved for the pod, or for the pod's
    PodGroup. A class only some of whose pods are listed counts them all (on the safe side).
    A listed pod's class is no user; but a full list refuses every other pod (room 0)."""
    users: dict[s.ClaimKey, set[int]] = defaultdict(set)
    for cls in classes:
        rep = cls.pods[0]
        for pc in dra_state.pod_claims.get(rep.key, ()):
            claim = dra_state.claims[pc.claim]
            if pc.shared_by is None and (claim.allocation is not None or pc.claim in several) \
                    and not (rep.group is not None and str(rep.group) in claim.reserved_groups) \
                    and not all(p.key in claim.reserved_pods for p in cls.pods):  # listed: PreFilter passes
                users[pc.claim].add(cls.index)
    out = []
    for key, cs in sorted(users.items()):
        claim = dra_state.claims[key]
        room = RESERVED_MAX - len(claim.reserved_pods) - len(claim.reserved_groups) - len(claim.reserved_other)
        if sum(len(classes[c].pods) for c in cs) > room:
            out.append(ReserveCap(key, max(0, room), frozenset(cs)))
    return tuple(out)


def pod_shared_name(claim: s.ClaimKey) -> SharedName:
    """The shared name of a claim several pending pods name: no PodGroup, the claim itself."""
    return s.GroupKey(""), str(claim)
OwnClaim = tuple[str, int, s.Claim]  # (the pod's claim entry, claim number, claim) still to allocate


@dataclass(frozen=True, slots=True)
class _Claims:
    """The pending classes' claims, sorted out."""

    own: list[list[OwnClaim]]  # per class: its per-pod claims still to allocate
    pinned: dict[int, tuple[frozenset[s.NodeName], ...]]  # class -> nodes its allocated claims reach
    shared: dict[SharedName, s.Claim]  # PodGroup claims still to allocate
    shared_users: dict[SharedName, frozenset[int]]  # ... and the classes naming each


class _TypeKey(NamedTuple):
    """What makes two devices one type (see the module docstring)."""

    node: s.NodeName | None
    reach: frozenset[s.NodeName]
    holder: Holder
    kept_by: tuple[int, ...]
    shareable: bool
    answers: tuple[Answer, ...]  # per question: does it select the device (``_answers``)
    values: tuple[tuple[str, MatchValue], ...]  # constraint attribute -> value
    consumes: tuple[tuple[str, str, int], ...]  # the counters each device consumes
    own: s.DeviceKey | None  # a metered shareable device: a type of its own


@dataclass(frozen=True, slots=True)
class _Types:
    """The device types, with each type's answers to the questions (one per SubRequest)."""

    types: tuple[DeviceType, ...]
    answers: tuple[tuple[Answer, ...], ...]  # per type
    question: Mapping[s.SubRequest, int]  # a question's index in the answers


def analyse(snapshot: s.ClusterSnapshot, classes: Sequence[PodClass], units: Sequence[VictimUnit],
            *, several: Mapping[s.ClaimKey, tuple[tuple[s.PodKey, str], ...]], free_on_eviction: bool = True,
            expected: Sequence[s.ExpectedPod] = ()) -> DraProblem:
    """The DRA view of the problem. ``several``: the claims several of the classes' pods name,
    with those pods (``pod_shared``, whose keys the class signatures read too). Without ``free_on_eviction`` every
    allocated device stays held whoever is evicted, as upstream 1.37 plans (its DRA plugin has
    no preemption support, KEP-5690). ``expected``: pod shapes whose device requests the
    devices are also asked (``expected_slots``), so that the hint can tell which devices each
    could use."""
    dra_state = snapshot.dra
    if not dra_state.pod_claims and not dra_state.devices:
        return DraProblem(class_slots=tuple(() for _ in classes))
    expected_claims = _expected_claims(dra_state, expected)
    consumers = _Consumers(snapshot, units, free_on_eviction)
    naming = _naming(dra_state, classes)
    holder_of = _holders(snapshot, consumers)
    kept_of = _kept(dra_state, naming)
    claims = _sort_claims(snapshot, classes, several)
    shares = _shares(snapshot, consumers, naming)
    questions, attrs = _questions(claims)
    for claim in expected_claims.values():
        _collect(claim, questions, attrs)
    found = _device_types(snapshot, (list(dict.fromkeys(questions)), attrs), (holder_of, shares), kept_of)

    kept = _kept_for_good(found.types, classes, units)

    def slots(entry: str, claim_no: int, claim: s.Claim) -> tuple[Slot, ...]:
        return _slots(entry, claim_no, claim, found, kept)

    shared: list[SharedClaim] = []
    shared_of_class: dict[int, list[int]] = defaultdict(list)
    for (group, entry), claim in sorted(claims.shared.items()):
        users = claims.shared_users[group, entry]
        shared.append(SharedClaim(index=len(shared), group=group, entry=entry, claim=claim,
                                  slots=slots(entry, 0, claim), users=users,
                                  pods=several.get(claim.key, ()) if not group else ()))
        for c in sorted(users):
            shared_of_class[c].append(len(shared) - 1)
    return DraProblem(
        types=found.types,
        class_slots=tuple(tuple(x for entry, k, claim in own for x in slots(entry, k, claim)) for own in claims.own),
        shared=tuple(shared),
        pod_shared=frozenset(several),
        reserve_caps=_reserve_caps(dra_state, classes, several),
        in_use_for_good=frozenset(d.key for t in kept for d in found.types[t].devices),
        shared_of_class={c: tuple(ids) for c, ids in shared_of_class.items()},
        pinned=claims.pinned,
        unit_types=_unit_types(found.types),
        counters={(k, c): amount for k, amounts in dra_state.counters.items() for c, amount in amounts.items()
                  if any((k, c) == (u[0], u[1]) for t in found.types for u in t.consumes)},
        expected_slots=tuple(slots("expected", 0, expected_claims[i]) if i in expected_claims else ()
                             for i in range(len(expected))),
    )


def _expected_claims(dra_state: s.DraState, expected: Sequence[s.ExpectedPod]) -> dict[int, s.Claim]:
    """Each expected pod's device request as a claim of one request (by the pod's index)."""
    out: dict[int, s.Claim] = {}
    for i, pod in enumerate(expected):
        if pod.device is None:
            continue
        if pod.device.device_class not in dra_state.classes:
            raise SnapshotInvalidError(f"expected pod {pod.name}", "device.deviceClassName",
                                       f"DeviceClass {pod.device.device_class!r} not found")
        request = s.Request(name=pod.device.name, alternatives=(pod.device,))
        out[i] = s.Claim(key=s.ClaimKey(f"expected/{i}"), namespace="", name=pod.name,
                         spec=s.ClaimSpec(requests=(request,)))
    return out


def _holders(snapshot: s.ClusterSnapshot, consumers: _Consumers) -> dict[s.DeviceKey, Holder]:
    """Who holds each allocated device: the victim units whose eviction frees it, or () for good."""
    holder_of: dict[s.DeviceKey, Holder] = {}
    for claim in snapshot.dra.claims.values():
        if claim.allocation is None:
            continue
        holder = consumers.holder(claim)
        for allocated in claim.allocation:
            if allocated.share_id is not None or allocated.admin_access:
                continue  # a share: _shares; admin access holds nothing
            prev = holder_of.get(allocated.device)
            holder_of[allocated.device] = holder if prev is None else _joined(prev, holder)
    return holder_of


class _Consumers:
    """The victim unit of each running pod a claim may reserve (pod keys as claims name them)."""

    def __init__(self, snapshot: s.ClusterSnapshot, units: Sequence[VictimUnit], free_on_eviction: bool) -> None:
        self.free_on_eviction = free_on_eviction
        self.unit_of_pod: dict[str, int] = {p.key: u.index for u in units for p in u.members}
        self.protected = {u.index for u in units if u.protected}
        self.running_of_group: dict[str, list[str]] = defaultdict(list)
        for pod in snapshot.pods:
            if pod.node is not None and pod.group is not None:
                self.running_of_group[pod.group].append(pod.key)

    def holder(self, claim: s.Claim) -> tuple[int, ...]:
        """The victim units whose eviction frees ``claim``'s devices; () for good."""
        consumers = list(claim.reserved_pods) + [p for g in claim.reserved_groups
                                                 for p in self.running_of_group.get(g, ())]
        unit_of = self.unit_of_pod
        if self.free_on_eviction and consumers and not claim.reserved_other and \
                all(p in unit_of and unit_of[p] not in self.protected for p in consumers):
            return tuple(sorted({unit_of[p] for p in consumers}))
        return ()


def _shares(snapshot: s.ClusterSnapshot, consumers: _Consumers,
            naming: Mapping[s.ClaimKey, set[int]]) -> dict[s.DeviceKey, list[Share]]:
    """The existing shares of each shareable device (allocation results with a shareID)."""
    out: dict[s.DeviceKey, list[Share]] = defaultdict(list)
    for claim in snapshot.dra.claims.values():
        shared = [a for a in claim.allocation or () if a.share_id is not None and not a.admin_access]
        if not shared:
            continue
        holder = consumers.holder(claim)
        kept = tuple(sorted(naming.get(claim.key, ()))) if holder else ()
        for allocated in shared:
            out[allocated.device].append(Share(holder, kept, allocated.consumed))
    return out


def _joined(a: tuple[int, ...], b: Holder) -> tuple[int, ...]:
    """The holder of a device two claims hold: for good if either does, else both's units."""
    if a == () or b == ():
        return ()
    return tuple(sorted(set(a) | set(b or ())))


def _naming(dra_state: s.DraState, classes: Sequence[PodClass]) -> dict[s.ClaimKey, set[int]]:
    """Claim -> the pending classes naming it (placed, they keep it allocated)."""
    naming: dict[s.ClaimKey, set[int]] = defaultdict(set)
    for cls in classes:
        for pc in dra_state.pod_claims.get(cls.pods[0].key, ()):
            naming[pc.claim].add(cls.index)
    return naming


def _kept(dra_state: s.DraState, naming: Mapping[s.ClaimKey, set[int]]) -> dict[s.DeviceKey, set[int]]:
    """Allocated device -> the pending classes naming its claim."""
    kept_of: dict[s.DeviceKey, set[int]] = defaultdict(set)
    for claim_key, classes in naming.items():
        for allocated in dra_state.claims[claim_key].allocation or ():
            if not allocated.admin_access:
                kept_of[allocated.device] |= classes
    return kept_of


def pod_shared(dra_state: s.DraState,
               pending: Iterable[s.PodKey]) -> dict[s.ClaimKey, tuple[tuple[s.PodKey, str], ...]]:
    """The per-pod ResourceClaims still to allocate that several pending pods name (outside
    a PodGroup's ``spec.resourceClaims``), each with those pods and their entry names, sorted.
    Upstream allocates such a claim for the first of them it schedules and pins the others
    to that allocation, as for a PodGroup's claim: the model plans it as one (``SharedClaim``)."""
    naming: dict[s.ClaimKey, list[tuple[s.PodKey, str]]] = defaultdict(list)
    for pod_key in pending:
        for pc in dra_state.pod_claims.get(pod_key, ()):
            claim = dra_state.claims.get(pc.claim)
            if pc.shared_by is None and claim is not None and claim.allocation is None:
                if any(p == pod_key for p, _ in naming[pc.claim]):
                    raise SnapshotInvalidError(f"Pod/{pod_key}", f"spec.resourceClaims[{pc.name}]",
                                               f"names ResourceClaim {pc.claim} a second time: one pod "
                                               "naming a claim twice is not modelled")
                naming[pc.claim].append((pod_key, pc.name))
    return {key: tuple(sorted(pods)) for key, pods in naming.items() if len(pods) > 1}


def _sort_claims(snapshot: s.ClusterSnapshot, classes: Sequence[PodClass],
                 several: Mapping[s.ClaimKey, object]) -> _Claims:
    """Each class's claims: its own still to allocate, the allocated ones pinning it, and the
    shared claims: its PodGroup's, and those several pending pods name (``several``)."""
    dra_state = snapshot.dra
    own_of: list[list[OwnClaim]] = []
    pinned: dict[int, list[frozenset[s.NodeName]]] = defaultdict(list)
    shared: dict[SharedName, s.Claim] = {}
    users: dict[SharedName, set[int]] = defaultdict(set)
    for cls in classes:
        own: list[OwnClaim] = []
        for pc in dra_state.pod_claims.get(cls.pods[0].key, ()):
            claim = dra_state.claims[pc.claim]
            if claim.allocation is not None:
                pinned[cls.index].append(_allocation_reach(claim, dra_state, snapshot.nodes))
            elif pc.shared_by is not None or pc.claim in several:
                name = (s.GroupKey(pc.shared_by), pc.name) if pc.shared_by is not None else pod_shared_name(pc.claim)
                shared.setdefault(name, claim)
                users[name].add(cls.index)
            else:
                own.append((pc.name, len(own), claim))
        own_of.append(own)
    return _Claims(own=own_of, pinned={c: tuple(sets) for c, sets in pinned.items()}, shared=shared,
                   shared_users={name: frozenset(cs) for name, cs in users.items()})


def _questions(claims: _Claims) -> tuple[list[s.SubRequest], set[str]]:
    """Every (sub)request the claims ask of a device, in order, and the attributes their
    constraints name."""
    questions: list[s.SubRequest] = []
    attrs: set[str] = set()
    for own in claims.own:
        for _, _, claim in own:
            _collect(claim, questions, attrs)
    for claim in claims.shared.values():
        _collect(claim, questions, attrs)
    return list(dict.fromkeys(questions)), attrs


def _device_types(snapshot: s.ClusterSnapshot, asked: tuple[list[s.SubRequest], set[str]],
                  held: tuple[Mapping[s.DeviceKey, Holder], Mapping[s.DeviceKey, list[Share]]],
                  kept_of: Mapping[s.DeviceKey, set[int]]) -> _Types:
    """The devices grouped into types (see the module docstring), in a stable order."""
    questions, constraint_attrs = asked
    holder_of, shares_of = held
    dra_state = snapshot.dra
    reach_cache: dict[tuple[tuple[s.NodeSelectorTerm, ...], bool], frozenset[s.NodeName]] = {}
    by_key: dict[_TypeKey, list[s.Device]] = defaultdict(list)
    answers_cache = _answer_all(dra_state, questions)
    for dev in dra_state.devices:
        if dev.node is not None:
            reach = frozenset((dev.node,))
        else:
            rk = (dev.node_selector, dev.all_nodes)
            if rk not in reach_cache:
                reach_cache[rk] = frozenset(
                    n.name for n in snapshot.nodes
                    if dev.all_nodes or any(selectors.term_matches(term, n) for term in dev.node_selector))
            reach = reach_cache[rk]
        sig = (dev.signature(), dev.consumable)
        # in use whole (a result without a shareID), a shareable device is an ordinary one
        shareable = dev.allow_multiple and dev.key not in holder_of
        holder = None if shareable else holder_of.get(dev.key)
        metered = shareable and bool(dev.consumable or dev.consumes)
        key = _TypeKey(node=dev.node, reach=reach, holder=holder,
                       kept_by=tuple(sorted(kept_of.get(dev.key, ()))) if holder else (),
                       shareable=shareable, answers=answers_cache[sig],
                       values=tuple((a, attribute(dev, a)) for a in sorted(constraint_attrs)),
                       consumes=dev.consumes, own=dev.key if metered else None)
        by_key[key].append(dev)
    types: list[DeviceType] = []
    answers: list[tuple[Answer, ...]] = []
    for key in sorted(by_key, key=lambda k: (k.node or "", sorted(k.reach)[:1], repr(k[2:]))):
        devices = tuple(sorted(by_key[key], key=lambda d: d.key))
        types.append(DeviceType(index=len(types), node=key.node, reach=key.reach,
                                devices=devices, holder=key.holder,
                                kept_by=key.kept_by, shareable=bool(key.shareable), values=dict(key.values),
                                consumes=key.consumes, metered=key.own is not None,
                                consumable=devices[0].consumable if key.own else (),
                                shares=tuple(shares_of.get(key.own, ())) if key.own else ()))
        answers.append(key.answers)
    return _Types(types=tuple(types), answers=tuple(answers), question={q: i for i, q in enumerate(questions)})


def _answer_all(dra_state: s.DraState, questions: Sequence[s.SubRequest]) -> dict[tuple[object, ...],
                                                                                 tuple[Answer, ...]]:
    """Each distinct device's answers to the questions. Question by question, each question's
    selectors compiled once and held while every device is asked: the compiled-selector cache
    is bounded (cel/cache.py), and device by device a snapshot with more selectors than it
    holds would compile every selector again for each device."""
    distinct: dict[tuple[object, ...], s.Device] = {}
    for dev in dra_state.devices:
        distinct.setdefault((dev.signature(), dev.consumable), dev)
    columns = []
    for q in questions:
        dclass = dra_state.classes.get(q.device_class)
        exprs = (*dclass.selectors, *q.selectors) if dclass is not None else ()
        programs = _compiled(exprs)
        columns.append([_answers(dev, q, dra_state, programs) for dev in distinct.values()])
    return {sig: tuple(column[i] for column in columns) for i, sig in enumerate(distinct)}


def compile_selectors(dra_state: s.DraState) -> None:
    """Every CEL selector the snapshot read, compiled (into cel's cache) before any is evaluated,
    so that the plan's deadline covers compiling: the reading only checked their length. One
    that does not compile is a SnapshotInvalidError naming the object and field it was read
    from; under ``cel.within`` one that might not compile before the deadline ends the plan with
    CelTimeLimitError naming them too."""
    for i, (expr, (obj, at)) in enumerate(dra_state.selectors.items()):
        if not i & 15:
            checkpoint("compiling selectors")
        try:
            cel.compile_expression(expr, where=f"{obj}: {at}")
        except cel.CelTimeLimitError:
            raise
        except cel.CelError as exc:
            raise SnapshotInvalidError(obj, at, f"CEL: {exc.reason}") from None


def _compiled(exprs: Sequence[str]) -> list[object] | None:
    """The compiled programs of ``exprs``; None when one does not compile (``selects`` raises
    that CelError when it is reached, as before)."""
    try:
        return [cel.compile_expression(e) for e in exprs]
    except cel.CelError:
        return None


def _unit_types(types: Sequence[DeviceType]) -> dict[int, dict[int, int]]:
    """Victim unit -> type -> devices of the type it holds."""
    out: dict[int, dict[int, int]] = defaultdict(dict)
    for t in types:
        for u in t.holder or ():
            out[u][t.index] = out[u].get(t.index, 0) + t.size
        for share in t.shares:  # a share of a metered device: its holders free what it uses
            for u in share.holder:
                out[u][t.index] = out[u].get(t.index, 0) + 1
    return dict(out)


def _kept_for_good(types: Sequence[DeviceType], classes: Sequence[PodClass],
                   units: Sequence[VictimUnit]) -> frozenset[int]:
    """The held types no plan frees: held for good, or no pending class may evict every unit
    holding them (the model's ``_freed`` is None there), so upstream's allocator finds their
    devices in use whichever plan runs."""
    powers = {c.power for c in classes if c.power is not None}
    out = set()
    for t in types:
        if t.shareable or t.holder is None:
            continue
        if t.holder == () or not any(all(may_preempt(p, units[u]) for u in t.holder) for p in powers):
            out.add(t.index)
    return frozenset(out)


def _slots(entry: str, claim_no: int, claim: s.Claim, found: _Types, kept: frozenset[int]) -> tuple[Slot, ...]:
    """One slot per request of ``claim``: per alternative, the types it may take."""
    match, distinct = _constraints(claim)
    made = []
    for req in claim.spec.requests:
        m = match[1] if match and (not match[0] or req.name in match[0]) else None
        d = next((a for reqs, a in distinct if not reqs or req.name in reqs), None)
        eligible, selected, tainted, broken = [], [], [], []
        for sub in req.alternatives:
            qi = found.question[sub]
            # a device in use for good is skipped before its selectors run (allocateOne's
            # in-use check, which admin access and a shared device's further shares pass)
            broken.append(frozenset[s.NodeName]().union(
                *(t.reach for t in found.types if found.answers[t.index][qi] is None
                  and (t.index not in kept or sub.admin_access))))
            selected.append(frozenset(t.index for t in found.types if found.answers[t.index][qi] in (True, TAINTED)))
            tainted.append(frozenset(t.index for t in found.types if found.answers[t.index][qi] == TAINTED))
            eligible.append(frozenset(t.index for t in found.types if found.answers[t.index][qi] is True
                                      and (m is None or t.values.get(m) is not None)
                                      and (d is None or t.values.get(d) is not None)))
        made.append(Slot(claim_entry=entry, claim=claim_no, request=req, eligible=tuple(eligible),
                         selected=tuple(selected), match=m, distinct=d, tainted=tuple(tainted),
                         broken=tuple(broken)))
    return tuple(made)


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


Covered = tuple[tuple[str, ...], str]  # (the requests a constraint covers, () for all; its attribute)


def _constraints(claim: s.Claim) -> tuple[Covered | None, list[Covered]]:
    """The claim's matchAttribute constraint (at most one) and its distinctAttribute ones."""
    matches = [(c.requests, c.match_attribute) for c in claim.spec.constraints if c.match_attribute]
    distinct = [(c.requests, c.distinct_attribute) for c in claim.spec.constraints if c.distinct_attribute]
    if len(matches) > 1:
        raise SnapshotInvalidError(f"ResourceClaim/{claim.key}", "spec.devices.constraints",
                                   "more than one matchAttribute constraint in a claim is not modelled")
    for reqs, _ in distinct:
        if len(reqs) != 1 and len(claim.spec.requests) != 1:
            raise SnapshotInvalidError(f"ResourceClaim/{claim.key}", "spec.devices.constraints",
                                       "distinctAttribute over more than one request is not modelled")
    return (matches[0] if matches else None), distinct


def _answers(dev: s.Device, sub: s.SubRequest, dra_state: s.DraState,
             programs: Sequence[object] | None = None) -> Answer:
    """Does ``sub`` select ``dev``, in upstream's order (``isSelectable`` and the static
    capacity check of ``validateDeviceRequest``, then ``allocateDevice``'s taint check):
    None when a selector fails at run time (whatever the taints), False when a selector or
    the capacity says no, TAINTED when selected but a taint is not tolerated, else True.
    ``programs``: the compiled selectors, class's first (``_compiled``)."""
    dclass = dra_state.classes.get(sub.device_class)
    if dclass is None:
        return False
    try:
        exprs = (*dclass.selectors, *sub.selectors)
        if not all(cel.selects(e, dev, programs[i] if programs is not None else None) for i, e in enumerate(exprs)):
            return False
    except cel.CelRuntimeError:
        return None
    # DRAConsumableCapacity: the request must fit the device on its own
    if (dev.consumable or sub.capacity) and consumed(sub.capacity, dev.consumable) is None:
        return False
    if any(t.effect in ("NoSchedule", "NoExecute") and not any(selectors.tolerates(tol, t) for tol in sub.tolerations)
           for t in dev.taints):
        return TAINTED
    return True


def _allocation_reach(claim: s.Claim, dra_state: s.DraState, nodes: Sequence[s.Node]) -> frozenset[s.NodeName]:
    """Nodes from which an existing allocation is usable: its nodeSelector and every device's reach."""
    by_key = dra_state.device_by_key()
    devices = [dev for a in claim.allocation or () if (dev := by_key.get(a.device)) is not None]
    allowed = claim.allocation_nodes  # () = any node
    return frozenset(n.name for n in nodes
                     if (not allowed or any(selectors.term_matches(t, n) for t in allowed))
                     and all(reaches(dev, n) for dev in devices))


def reaches(dev: s.Device, node: s.Node) -> bool:
    """Is ``dev`` reachable from ``node``?"""
    if dev.node is not None:
        return dev.node == node.name
    return dev.all_nodes or any(selectors.term_matches(t, node) for t in dev.node_selector)
