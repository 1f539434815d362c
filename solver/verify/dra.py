"""The DRA rules: the plan's device allocations against the claims, classes and devices of the
snapshot. One ``check_*`` function per rule."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from solver import cel
from solver.core import snapshot as s
from solver.core.plan import DeviceAllocation, PlanDevice
from solver.verify import read
from solver.verify.violation import NEVER, Violation

if TYPE_CHECKING:
    from solver.verify.view import View


# ---- DRA ----------------------------------------------------------------------------
# A plan allocation's owner: (False, "ns/pod") for a per-pod claim, (True, "ns/pg") for a
# PodGroup's shared claim. Requests are named as in the plan: the request's name for
# `exactly`, "request/sub" for a firstAvailable entry (SubRequest.name either way).

Owner = tuple[bool, str]


def _where(claim: str, request: str | None = None) -> str:
    return f"claim {claim}" if request is None else f"claim {claim} request {request}"


def _device_key(d: PlanDevice) -> s.DeviceKey:
    return s.DeviceKey(f"{d.driver}/{d.pool}/{d.device}")


def _alloc_name(a: DeviceAllocation) -> str:
    owner = f"podGroup {a.pod_group}" if a.pod_group else f"pod {a.pod}"
    return f"{owner} {_where(a.claim, a.request)}"


def _attribute(dev: s.Device, qualified: str) -> s.AttributeValue | None:
    domain, _, name = qualified.rpartition("/")
    return dev.attributes.get(domain or dev.driver, {}).get(name)


def _typed(value: s.AttributeValue) -> tuple[str, object]:
    return type(value).__name__, value  # True and 1 are different attribute values


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A plan allocation naming a claim the plan must allocate, and one of its request's alternatives."""

    alloc: DeviceAllocation
    owner: Owner
    claim: s.Claim
    request: s.Request
    sub: s.SubRequest
    nodes: tuple[str, ...]  # every device must be reachable from each: the sharers' nodes
    sites: tuple[str, ...]  # where the claim gets allocated (a bound pod's node): All mode's reference


class DraView:
    """Claims, devices and the plan's allocations, indexed once (part of ``View``)."""

    def __init__(self, view: View) -> None:
        dra = view.snapshot.dra
        self.state = dra
        self.devices = dra.device_by_key()
        self.local: dict[str, list[s.Device]] = defaultdict(list)  # node -> its node-local devices
        self.network: list[s.Device] = []
        for dev in dra.devices:
            if dev.node is not None:
                self.local[dev.node].append(dev)
            else:
                self.network.append(dev)
        self.entries = {pod: {pc.name: pc for pc in pcs} for pod, pcs in dra.pod_claims.items()}
        self.sharers: dict[tuple[str, str], list[s.Pod]] = defaultdict(list)  # (group, entry) -> its pods
        self.shared_claim: dict[tuple[str, str], s.ClaimKey] = {}
        for pod_key, pcs in dra.pod_claims.items():
            for pc in pcs:
                if pc.shared_by:
                    self.shared_claim.setdefault((pc.shared_by, pc.name), pc.claim)
                    if s.PodKey(pod_key) in view.pods:
                        self.sharers[pc.shared_by, pc.name].append(view.pods[s.PodKey(pod_key)])
        self.problems: list[Violation] = []  # what the plan's allocations fail to name
        # what the plan must allocate: every unallocated claim of a pending pod it binds. A
        # per-pod claim several of those pods name is allocated once, for the first of them
        # by name (upstream allocates it for the first pod it schedules and pins the others
        # to it); its devices must be reachable from each of their nodes
        self.expected: dict[tuple[Owner, str], s.Claim] = {}
        self.owner_of: dict[s.ClaimKey, str] = {}  # such a claim -> the pod owning its allocation
        self.claim_users: dict[s.ClaimKey, list[str]] = defaultdict(list)  # ... and every bound pod naming it
        used_by_bound: set[s.ClaimKey] = set()
        for pod_key in sorted(view.bound):
            pod = view.pods.get(s.PodKey(pod_key))
            if pod is None or pod.node is not None:
                continue
            for pc in dra.pod_claims.get(pod_key, ()):
                used_by_bound.add(pc.claim)
                claim = dra.claims.get(pc.claim)
                if claim is None:
                    self.problems.append(Violation(rule="device-allocation", subject=pod_key,
                                                   detail=f"{_where(pc.name)}: ResourceClaim {pc.claim} "
                                                          "is not in the snapshot"))
                elif claim.allocation is None:
                    if not pc.shared_by:
                        first = self.owner_of.setdefault(pc.claim, pod_key)
                        self.claim_users[pc.claim].append(pod_key)
                        if first != pod_key:
                            continue
                    claim_owner: Owner = (True, pc.shared_by) if pc.shared_by else (False, pod_key)
                    self.expected[claim_owner, pc.name] = claim
        # existing allocations: a claim goes free when every consumer is evicted and no pod
        # the plan binds uses it; an allocated claim nobody reserves, or one reserved by
        # another kind of consumer, stays held
        self.consumers: dict[s.ClaimKey, list[str]] = {}
        self.freed: set[s.ClaimKey] = set()
        self.held: dict[s.DeviceKey, list[s.ClaimKey]] = defaultdict(list)  # in use whole
        # shares of allowMultipleAllocations devices (results with a shareID) still held
        self.shares: dict[s.DeviceKey, list[tuple[s.ClaimKey, s.AllocationResult]]] = defaultdict(list)
        for key in sorted(dra.claims):
            claim = dra.claims[key]
            if claim.allocation is None:
                continue
            consumers = list(claim.reserved_pods) + [p.key for g in claim.reserved_groups
                                                     for p in view.members.get(s.GroupKey(g), ()) if p.node]
            self.consumers[key] = consumers
            if (view.dra_preemption and consumers and not claim.reserved_other
                    and all(c in view.evicted for c in consumers) and key not in used_by_bound):
                self.freed.add(key)
            else:
                for ad in claim.allocation:
                    if ad.admin_access:
                        continue  # "not considered as allocated" (allocateddevices.go)
                    if ad.share_id is None:
                        self.held[ad.device].append(key)
                    else:
                        self.shares[ad.device].append((key, ad))
        # the plan's allocations (``users``: those that use a device up; ``admin``: the devices
        # taken with admin access, which use up nothing but still count as in use for counters)
        self.users: dict[s.DeviceKey, list[DeviceAllocation]] = defaultdict(list)
        self.admin: set[s.DeviceKey] = set()
        self.resolved: list[_Resolved] = []
        self.planned_on: dict[s.DeviceKey, list[s.SubRequest]] = defaultdict(list)  # device -> requests taking it
        counts: dict[tuple[Owner, str, str], int] = defaultdict(int)
        for a in view.plan.device_allocations:
            for planned in a.devices:
                if planned.admin_access:
                    self.admin.add(_device_key(planned))
                else:
                    self.users[_device_key(planned)].append(a)
            owner, why = self._owner(view, a)
            if owner is None:
                self.problems.append(Violation(rule="device-allocation", subject=a.pod or a.pod_group or "?",
                                               detail=f"{_where(a.claim, a.request)}: {why}"))
                continue
            claim = self.expected[owner, a.claim]
            base = a.request.split("/", 1)[0]
            request = next((r for r in claim.spec.requests if r.name == base), None)
            if request is None:
                self.problems.append(Violation(rule="device-allocation", subject=owner[1],
                                               detail=f"{_where(a.claim, a.request)}: the claim has no request {base}"))
                continue
            counts[owner, a.claim, request.name] += 1
            sub = next((x for x in request.alternatives if x.name == a.request), None)
            if sub is None:
                names = [x.name for x in request.alternatives]
                self.problems.append(Violation(rule="device-allocation", subject=owner[1],
                                               detail=f"{_where(a.claim, a.request)}: not one of request "
                                                      f"{request.name}'s alternatives {names}"))
                continue
            if owner[0]:
                pods = self.sharers[owner[1], a.claim]
                sites = sorted({view.bound[p.key] for p in pods if p.key in view.bound and p.node is None})
                nodes = sorted(set(sites) | {p.node for p in pods if p.node and view.running_after(p)})
            else:  # the pods naming a per-pod claim several of them name: where it is allocated
                sites = nodes = sorted({view.bound[p] for p in self.claim_users.get(claim.key) or [a.pod]})
            self.resolved.append(_Resolved(alloc=a, owner=owner, claim=claim, request=request, sub=sub,
                                           nodes=tuple(nodes), sites=tuple(sites)))
            if any(planned.admin_access != sub.admin_access for planned in a.devices):
                self.problems.append(Violation(rule="device-allocation", subject=owner[1], detail=(
                    f"{_where(a.claim, a.request)}: a result's adminAccess must be the request's "
                    f"({str(sub.admin_access).lower()})")))
            for planned in a.devices:
                if not planned.admin_access:
                    self.planned_on[_device_key(planned)].append(sub)
        for (owner, entry), claim in sorted(self.expected.items()):
            for request in claim.spec.requests:
                n = counts.get((owner, entry, request.name), 0)
                if n != 1:
                    self.problems.append(Violation(
                        rule="device-allocation", subject=owner[1],
                        detail=f"{_where(entry, request.name)}: " + ("no device allocation" if n == 0 else
                                                                      f"allocated {n} times")))
        self._selects: dict[tuple[str, s.DeviceKey], bool | str] = {}
        self._matching: dict[tuple[s.SubRequest, str],
                             tuple[list[s.DeviceKey], list[tuple[s.DeviceKey, str]]]] = {}

    def _owner(self, view: View, a: DeviceAllocation) -> tuple[Owner | None, str]:
        """The owner of an allocation the plan must make, or None and why the allocation is not one."""
        if a.pod and a.pod_group:
            return None, f"names both pod {a.pod} and podGroup {a.pod_group}"
        if not a.pod and not a.pod_group:
            return None, "names neither a pod nor a podGroup"
        if a.pod:
            owner: Owner = (False, a.pod)
            if (owner, a.claim) in self.expected:
                return owner, ""
            pod = view.pods.get(s.PodKey(a.pod))
            if pod is None or pod.node is not None or a.pod not in view.bound:
                return None, "the pod is not a pending pod bound by the plan"
            pc = self.entries.get(a.pod, {}).get(a.claim)
            if pc is None:
                return None, "the pod has no such claim"
            if pc.shared_by:
                return None, f"the claim is PodGroup {pc.shared_by}'s shared claim: allocate it once for the group"
            first = self.owner_of.get(pc.claim)
            if first is not None and first != a.pod:
                return None, (f"ResourceClaim {pc.claim} is named by several pods the plan binds: it is "
                              f"allocated once, for the first of them, {first}")
            return None, "the claim is already allocated"
        owner = (True, a.pod_group)
        if (owner, a.claim) in self.expected:
            return owner, ""
        claim_key = self.shared_claim.get((a.pod_group, a.claim))
        if claim_key is None:
            return None, "the PodGroup has no such shared claim"
        claim = self.state.claims.get(claim_key)
        if claim is not None and claim.allocation is not None:
            return None, "the claim is already allocated"
        return None, "no pod using the claim is bound by the plan"

    def selects(self, expr: str, dev: s.Device) -> bool | str:
        """Whether the CEL selector holds for ``dev``, or why its evaluation fails."""
        key = (expr, dev.key)
        if key not in self._selects:
            try:
                self._selects[key] = cel.selects(expr, dev)
            except cel.CelRuntimeError as e:
                self._selects[key] = f"CEL runtime error: {e.reason}"
            except cel.CelError as e:  # the snapshot's parser rejects these; never crash on them here
                self._selects[key] = f"does not compile: {e.reason}"
        return self._selects[key]

    def reaches(self, view: View, dev: s.Device, node_name: str) -> bool:
        if dev.node is not None:
            return dev.node == node_name
        if dev.all_nodes:
            return True
        node = view.node_facts.get(node_name)
        return node is not None and any(read.term_holds(_term(t), node) for t in dev.node_selector)

    def untolerated(self, sub: s.SubRequest, dev: s.Device) -> list[s.Taint]:
        return [t for t in dev.taints if t.effect in ("NoSchedule", "NoExecute")
                and not any(read.tolerated(_toleration(tol), (t.key, t.value, t.effect)) for tol in sub.tolerations)]

    def selector_failure(self, sub: s.SubRequest, dev: s.Device) -> tuple[str, bool]:
        """Why ``sub``'s class and selectors do not take ``dev`` ("" when they do), and whether
        that is a CEL runtime error (upstream aborts the allocation then). Upstream's order:
        the class's selectors, then the request's, up to the first false or failing one."""
        dclass = self.state.classes.get(sub.device_class)
        if dclass is None:
            return f"DeviceClass {sub.device_class} does not exist", False
        for origin, exprs in ((f"DeviceClass {dclass.name} selector", dclass.selectors),
                              ("the request's selector", sub.selectors)):
            for e in exprs:
                result = self.selects(e, dev)
                if result is True:
                    continue
                if result is False:
                    return f"fails {origin} {e}", False
                return f"breaks {origin} {e} ({result})", True
        return "", False

    def matching(self, view: View, sub: s.SubRequest,
                 node: str) -> tuple[list[s.DeviceKey], list[tuple[s.DeviceKey, str]]]:
        """Every device reachable from ``node`` that ``sub`` may take (class, selectors, taints),
        sorted, and the reachable devices on which a selector fails to evaluate (with why)."""
        key = (sub, node)
        if key not in self._matching:
            takes, broken = [], []
            for d in self.local.get(node, []) + [d for d in self.network if self.reaches(view, d, node)]:
                why, error = self.selector_failure(sub, d)
                if error and (d.key not in self.held or sub.admin_access):
                    # allocateOne skips a device in use before its selectors run
                    broken.append((d.key, why))
                elif not why and not self.untolerated(sub, d):
                    takes.append(d.key)
            self._matching[key] = sorted(takes), sorted(broken)
        return self._matching[key]

    def every(self, view: View, sub: s.SubRequest, node: str) -> list[s.DeviceKey]:
        """allocationMode All's devices reachable from ``node`` (validateDeviceRequest): those the
        class and selectors take that can hold the request on their own (static capacity),
        sorted; taints aside (a device with one not tolerated cannot be taken, and then All
        cannot be met)."""
        out = []
        for d in self.local.get(node, []) + [d for d in self.network if self.reaches(view, d, node)]:
            why, error = self.selector_failure(sub, d)
            if not why and not error and _share_use(sub, d)[0] is not None:
                out.append(d.key)
        return sorted(out)

    def power(self, view: View, a: DeviceAllocation) -> float:
        """Preemption power of an allocation's owner: its pending pod, or the group's bound pods."""
        if a.pod_group:
            pods = [p for p in view.members.get(s.GroupKey(a.pod_group), ()) if p.key in view.bound and p.node is None]
        else:  # a claim several bound pods name: any of them may be the one allocating it
            pc = self.entries.get(a.pod, {}).get(a.claim)
            keys = self.claim_users.get(pc.claim) or [a.pod] if pc is not None else [a.pod]
            found = [view.pods.get(s.PodKey(k)) for k in keys]
            pods = [p for p in found if p is not None and p.key in view.bound and p.node is None]
        return max((view.power(p) for p in pods), default=NEVER)


def check_device_allocations(view: View) -> list[Violation]:
    """One allocation per request of every unallocated claim of each pending pod the plan binds
    (a shared claim: once for its PodGroup), none else; a firstAvailable entry of the request."""
    return list(view.dra.problems)


RESERVED_FOR_MAX = 256  # resourceapi.ResourceClaimReservedForMaxSize


def check_claim_reservations(view: View) -> list[Violation]:
    """Each binding adds its pod, or for a PodGroup's shared claim its PodGroup, to the
    reservedFor of every claim it uses that does not list it yet (PreBind's ``bindClaim``);
    kube-apiserver refuses a list of more than 256, so a plan may not need one."""
    out = []
    dv = view.dra
    joining: dict[s.ClaimKey, set[str]] = defaultdict(set)
    for pod_key in sorted(view.bound):
        pod = view.pods.get(s.PodKey(pod_key))
        if pod is None or pod.node is not None:
            continue
        for pc in dv.state.pod_claims.get(pod_key, ()):
            claim = dv.state.claims.get(pc.claim)
            if claim is None:
                continue
            if pc.shared_by:
                if pc.shared_by not in claim.reserved_groups:
                    joining[claim.key].add(f"podgroup {pc.shared_by}")
            elif pod_key not in claim.reserved_pods and not (pod.group and str(pod.group) in claim.reserved_groups):
                joining[claim.key].add(f"pod {pod_key}")
    for key, new in sorted(joining.items()):
        claim = dv.state.claims[key]
        have = len(claim.reserved_pods) + len(claim.reserved_groups) + len(claim.reserved_other)
        if have + len(new) > RESERVED_FOR_MAX:
            out.append(Violation(rule="claim-reservations", subject=str(key),
                                 detail=f"reservedFor would list {have + len(new)} consumers ({have} now, "
                                        f"{len(new)} the plan binds), past the {RESERVED_FOR_MAX} it may"))
    return out


def check_allocated_claims(view: View) -> list[Violation]:
    """A pod bound with an already allocated claim lands where that allocation is usable."""
    out = []
    dv = view.dra
    for pod_key in sorted(view.bound):
        pod = view.pods.get(s.PodKey(pod_key))
        node = view.nodes.get(s.NodeName(view.bound[pod_key]))
        if pod is None or pod.node is not None or node is None:
            continue
        for pc in dv.state.pod_claims.get(pod_key, ()):
            claim = dv.state.claims.get(pc.claim)
            if claim is None or claim.allocation is None:
                continue
            facts = view.node_facts.get(node.name)
            if claim.allocation_nodes and not (facts is not None and any(read.term_holds(_term(t), facts)
                                                                         for t in claim.allocation_nodes)):
                out.append(Violation(rule="device-reach", subject=pod_key,
                                     detail=f"{_where(pc.name)}: node {node.name} is outside the allocation "
                                            f"nodeSelector of ResourceClaim {claim.key}"))
            for ad in claim.allocation:
                dev = dv.devices.get(ad.device)
                if dev is not None and not dv.reaches(view, dev, node.name):
                    out.append(Violation(rule="device-reach", subject=pod_key,
                                         detail=f"{_where(pc.name)}: device {ad.device} of ResourceClaim {claim.key}'s "
                                                f"allocation is not reachable from node {node.name}"))
    return out


def check_devices(view: View) -> list[Violation]:
    """Each allocated device exists, matches its DeviceClass and request selectors (CEL), and
    its NoSchedule/NoExecute taints are tolerated by the request."""
    out = []
    dv = view.dra
    for r in dv.resolved:
        where = _where(r.alloc.claim, r.alloc.request)
        missing_class = r.sub.device_class not in dv.state.classes
        if missing_class:
            out.append(Violation(rule="device-selector", subject=r.owner[1],
                                 detail=f"{where}: DeviceClass {r.sub.device_class} does not exist"))
        for ad in r.alloc.devices:
            key = _device_key(ad)
            dev = dv.devices.get(key)
            if dev is None:
                out.append(Violation(rule="device-unknown", subject=r.owner[1],
                                     detail=f"{where}: device {key} does not exist"))
                continue
            why, _ = dv.selector_failure(r.sub, dev)
            if why and not missing_class:
                out.append(Violation(rule="device-selector", subject=r.owner[1], detail=f"{where}: device {key} {why}"))
            out.extend(Violation(rule="device-taint", subject=r.owner[1],
                                 detail=f"{where}: device {key} taint {t.key}={t.value}:{t.effect} is not tolerated")
                       for t in dv.untolerated(r.sub, dev))
        # a selector failing at run time on a device the allocator meets aborts the allocation:
        # on any device reachable from the claim's node (every candidate node of a shared claim)
        # and the firstAvailable entries before the one taken are tried first: such a failure
        # in one of them aborts before the next entry is reached (allocateOne)
        taken = {_device_key(ad) for ad in r.alloc.devices}
        sites = [n for n in r.sites if s.NodeName(n) in view.nodes]
        for sub in r.request.alternatives[:r.request.alternatives.index(r.sub) + 1]:
            skip = taken if sub == r.sub else set()
            broken = {n: [(k, why) for k, why in dv.matching(view, sub, n)[1] if k not in skip] for n in sites}
            if sites and all(broken.values()):
                k, why = broken[sites[0]][0]
                entry = "" if sub == r.sub else f" (firstAvailable entry {sub.name}, tried before {r.sub.name})"
                detail = f"{where}: the allocation aborts on node {sites[0]}: device {k} {why}{entry}"
                out.append(Violation(rule="device-selector", subject=r.owner[1], detail=detail))
                break
    return out


def check_device_reach(view: View) -> list[Violation]:
    """Each device is reachable from the pod's node; a shared claim's from every node where
    a pod using it is bound or keeps running."""
    out: list[Violation] = []
    dv = view.dra
    for r in dv.resolved:
        for ad in r.alloc.devices:
            dev = dv.devices.get(_device_key(ad))
            if dev is None:
                continue
            out.extend(Violation(rule="device-reach", subject=r.owner[1],
                                 detail=f"{_where(r.alloc.claim, r.alloc.request)}: device {dev.key} "
                                        f"is not reachable from node {n}")
                       for n in r.nodes if s.NodeName(n) in view.nodes and not dv.reaches(view, dev, n))
    return out


def check_device_counts(view: View) -> list[Violation]:
    """ExactCount: exactly ``count`` devices. All: exactly every device the request may take
    that is reachable from the node the claim is allocated on (at least one); for a shared
    claim, from the node of one of the pods the plan binds."""
    out = []
    dv = view.dra
    for r in dv.resolved:
        got = sorted(_device_key(ad) for ad in r.alloc.devices)
        where = _where(r.alloc.claim, r.alloc.request)
        if len(set(got)) != len(got):
            out.append(Violation(rule="device-count", subject=r.owner[1],
                                 detail=f"{where}: a device is listed twice ({got}): a request's devices are distinct"))
            continue
        if not r.sub.all_mode:
            if len(got) != r.sub.count:
                out.append(Violation(rule="device-count", subject=r.owner[1],
                                     detail=f"{where}: {len(got)} devices, the request asks for exactly {r.sub.count}"))
            continue
        sites = [n for n in r.sites if s.NodeName(n) in view.nodes]
        want = {n: dv.every(view, r.sub, n) for n in sites}
        if not sites or any(w and w == got for w in want.values()):
            continue
        if len(sites) == 1:
            n, w = sites[0], want[sites[0]]
            if not w:
                detail = f"allocationMode All, but no matching device is reachable from node {n}"
            else:
                missing, extra = sorted(set(w) - set(got)), sorted(set(got) - set(w))
                detail = (f"allocationMode All takes every matching device reachable from node {n}: "
                          + (f"missing {missing}, extra {extra}" if missing or extra else "a device is listed twice"))
        else:
            detail = (f"allocationMode All takes every matching device reachable from the claim's node: "
                      f"no node of {sites} gives exactly {got}")
        out.append(Violation(rule="device-count", subject=r.owner[1], detail=f"{where}: {detail}"))
    return out


def check_device_conflicts(view: View) -> list[Violation]:
    """No device is allocated twice: across the plan, and against existing allocations whose
    claims the plan does not free. An allowMultipleAllocations device may be shared, unless
    an existing allocation holds it whole (a result without a shareID)."""
    out = []
    dv = view.dra
    for key, allocs in dv.users.items():
        dev = dv.devices.get(key)
        if dev is None or (dev.allow_multiple and not dv.held.get(key)):
            continue
        users = [_alloc_name(a) for a in allocs] + [f"ResourceClaim {c} (allocated)" for c in dv.held.get(key, ())]
        if len(users) > 1:
            out.append(Violation(rule="device-conflict", subject=key,
                                 detail=f"allocated {len(users)} times: {'; '.join(users)}"))
    return out


def _counters_in_use(dv: DraView) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], list[s.DeviceKey]]]:
    """Per counter of a counter set: what the devices in use at the end (the plan's, and those
    of allocations it does not free) consume, a device allocated several times once; and
    which devices those are."""
    consumed: dict[tuple[str, str], int] = defaultdict(int)
    users: dict[tuple[str, str], list[s.DeviceKey]] = defaultdict(list)
    for key in set(dv.users) | dv.admin | set(dv.held) | set(dv.shares):
        dev = dv.devices.get(key)
        if dev is not None:
            for set_key, counter, amount in dev.consumes:
                consumed[set_key, counter] += amount
                users[set_key, counter].append(key)
    return consumed, users


def check_device_counters(view: View) -> list[Violation]:
    """Partitionable devices: per counter of a counter set (a pool's sharedCounters), the
    devices in use at the end consume no more than its amount."""
    counters = view.snapshot.dra.counters
    if not counters:
        return []
    consumed, _ = _counters_in_use(view.dra)
    return [Violation(rule="device-counter", subject=f"{set_key}/{counter}",
                      detail=f"devices in use consume {used}, the set holds {counters[set_key].get(counter, 0)}")
            for (set_key, counter), used in sorted(consumed.items())
            if used > counters.get(set_key, {}).get(counter, 0)]


def _capacities(dev: s.Device) -> dict[str, int]:
    return {c.name: c.value for c in dev.consumable}


def _share_use(sub: s.SubRequest, dev: s.Device) -> tuple[dict[str, int] | None, str]:
    """What one allocation of ``dev`` for ``sub`` consumes, per capacity of the device, read
    from upstream's consumable_capacity.go; or None and why the request does not fit."""
    asked = dict(sub.capacity)
    have = {c.name: c for c in dev.consumable}
    unknown = sorted(set(asked) - set(have))
    if unknown:
        return None, f"the device has no capacity {unknown[0]}"
    use: dict[str, int] = {}
    for name, cap in have.items():
        pol = cap.policy
        want = asked.get(name)
        if want is None:
            amount = cap.value if pol is None or pol.default is None else pol.default
        elif pol is None:
            amount = want
        elif pol.min is not None:  # validRange: up to min, then up to a whole number of steps,
            amount = max(want, pol.min)  # in whole units (Value(), rounded up: the fractional gate is off)
            if pol.step is not None and want >= pol.min:
                low, step = _whole(pol.min), _whole(pol.step)
                amount = (low + -(-(_whole(want) - low) // step) * step) * 1000
        else:  # validValues: the first at or above the request, else the request
            amount = next((v for v in pol.valid_values if v >= want), want)
        if pol is not None and amount != pol.default:
            if pol.min is not None and ((pol.max is not None and amount > pol.max) or (
                    pol.step is not None and (_whole(amount) - _whole(pol.min)) % _whole(pol.step))):
                return None, f"capacity {name}: {amount}m is outside the requestPolicy's validRange"
            if pol.min is None and pol.valid_values and amount not in pol.valid_values:
                return None, f"capacity {name}: {amount}m is not one of the requestPolicy's validValues"
        if amount > cap.value:
            return None, f"capacity {name}: {amount}m is more than the device's {cap.value}m"
        use[name] = amount
    return use, ""


def _whole(milli: int) -> int:
    """resource.Quantity.Value() of a non-negative amount in milli-units: up to a whole unit."""
    return (milli + 999) // 1000


def _capacity_in_use(dv: DraView, key: s.DeviceKey) -> dict[str, int] | None:
    """What the plan's shares of an allowMultipleAllocations device and the existing shares it
    does not free consume, per capacity; None when a planned share does not fit on its own."""
    dev = dv.devices[key]
    total: dict[str, int] = defaultdict(int)
    for _, ad in dv.shares.get(key, ()):
        for name, amount in ad.consumed:
            total[name] += amount
    for sub in dv.planned_on.get(key, ()):
        use, _ = _share_use(sub, dev)
        if use is None:
            return None
        for name, amount in use.items():
            total[name] += amount
    return total


def _quantity_milli(text: str) -> Fraction | None:
    """A plan's consumedCapacity value in milli-units ("2" -> 2000, "15Gi" -> 15·2^30·1000)."""
    try:
        return read.amount(text) * 1000
    except ValueError:
        return None


def check_device_capacity(view: View) -> list[Violation]:
    """Consumable capacity (DRAConsumableCapacity): every request fits each device it gets on
    its own (the capacities it names exist, the requestPolicy holds, no more than the device
    has); a share of an allowMultipleAllocations device carries a shareID (unique on the
    device) and the consumedCapacity upstream computes, an ordinary device neither; and per
    shareable device the shares at the end, the plan's and those it does not free, stay
    within each capacity."""
    out = []
    dv = view.dra
    ids: dict[s.DeviceKey, set[str]] = defaultdict(set)
    for key, held in dv.shares.items():
        ids[key].update(ad.share_id or "" for _, ad in held)
    for r in dv.resolved:
        where = _where(r.alloc.claim, r.alloc.request)
        for planned in r.alloc.devices:
            key = _device_key(planned)
            dev = dv.devices.get(key)
            if dev is None:
                continue
            use, why = _share_use(r.sub, dev)
            if use is None:
                out.append(Violation(rule="device-capacity", subject=r.owner[1],
                                     detail=f"{where}: device {key}: {why}"))
                continue
            if not dev.allow_multiple:
                if planned.share_id or planned.consumed:
                    out.append(Violation(rule="device-capacity", subject=r.owner[1],
                                         detail=f"{where}: device {key} is not shareable, yet the plan gives a "
                                                "shareID or consumedCapacity"))
                continue
            if not planned.share_id or planned.share_id in ids[key]:
                out.append(Violation(rule="device-capacity", subject=r.owner[1],
                                     detail=f"{where}: a share of device {key} needs a shareID of its own, "
                                            f"got {planned.share_id!r}"))
            ids[key].add(planned.share_id)
            given = {name: _quantity_milli(v) for name, v in planned.consumed}
            if given != use:
                out.append(Violation(rule="device-capacity", subject=r.owner[1],
                                     detail=f"{where}: device {key}: consumedCapacity {dict(planned.consumed)}, "
                                            f"upstream consumes {use} (milli-units)"))
    for key in sorted({k for k in dv.users if (d := dv.devices.get(k)) is not None and d.allow_multiple}):
        in_use = _capacity_in_use(dv, key)
        if in_use is None:
            continue
        for name, value in sorted(_capacities(dv.devices[key]).items()):
            if in_use.get(name, 0) > value:
                out.append(Violation(rule="device-capacity", subject=key,
                                     detail=f"capacity {name}: the shares in use consume {in_use[name]}m, "
                                            f"the device has {value}m"))
    return out


def check_device_constraints(view: View) -> list[Violation]:
    """matchAttribute: the devices of the listed requests (all when none are listed) share one
    value of the attribute; distinctAttribute: pairwise different values. A device without
    the attribute violates either."""
    out = []
    dv = view.dra
    by_claim: dict[tuple[Owner, str], list[_Resolved]] = defaultdict(list)
    for r in dv.resolved:
        by_claim[r.owner, r.alloc.claim].append(r)
    for (owner, entry), rs in by_claim.items():
        for con in rs[0].claim.spec.constraints:
            covered = [r for r in rs
                       if not con.requests or r.request.name in con.requests or r.sub.name in con.requests]
            devices = [dv.devices[k] for r in covered for k in map(_device_key, r.alloc.devices) if k in dv.devices]
            for kind, attr in (("matchAttribute", con.match_attribute), ("distinctAttribute", con.distinct_attribute)):
                if attr is None:
                    continue
                values: list[tuple[s.Device, s.AttributeValue]] = []
                for dev in devices:
                    v = _attribute(dev, attr)
                    if v is None:
                        out.append(Violation(rule="device-constraint", subject=owner[1],
                                             detail=f"{_where(entry)}: {kind} {attr}: device {dev.key} "
                                                    "has no such attribute"))
                    else:
                        values.append((dev, v))
                by_value: dict[tuple[str, object], list[s.Device]] = defaultdict(list)
                for dev, v in values:
                    by_value[_typed(v)].append(dev)
                if kind == "matchAttribute" and len(by_value) > 1:
                    shown = ", ".join(f"{dev.key}={v!r}" for dev, v in values)
                    out.append(Violation(rule="device-constraint", subject=owner[1],
                                         detail=f"{_where(entry)}: {kind} {attr}: the devices differ: {shown}"))
                if kind == "distinctAttribute":
                    for (_, shared), devs in by_value.items():
                        if len(devs) > 1:
                            out.append(Violation(rule="device-constraint", subject=owner[1],
                                                 detail=f"{_where(entry)}: {kind} {attr}: devices "
                                                        f"{[d.key for d in devs]} share {shared!r}"))
    return out


def needed_for_devices(view: View, members: list[s.Pod], prio: int) -> bool:
    """Putting the victim back keeps a claim of it held, and the plan gives one of that
    claim's devices to an owner that may preempt the victim; or the devices it would hold
    again push a counter of a partitionable device's set past its amount, and the plan gives a
    device consuming that counter to such an owner."""
    dv = view.dra
    keys = {p.key for p in members}
    back: dict[tuple[str, str], int] = defaultdict(int)  # what its devices would consume again
    back_shares: dict[s.DeviceKey, list[s.AllocationResult]] = defaultdict(list)
    for claim_key in sorted(dv.freed):
        if not keys.intersection(dv.consumers[claim_key]):
            continue
        for ad in dv.state.claims[claim_key].allocation or ():
            dev = dv.devices.get(ad.device)
            if dev is None:
                continue
            if dev.allow_multiple and ad.share_id is not None:
                back_shares[ad.device].append(ad)
                continue
            if any(dv.power(view, a) > prio for a in dv.users.get(ad.device, ())):
                return True
            for set_key, counter, amount in dev.consumes:
                back[set_key, counter] += amount
    for key, returning in back_shares.items():
        if not any(dv.power(view, a) > prio for a in dv.users.get(key, ())):
            continue
        in_use = _capacity_in_use(dv, key)
        if in_use is None or any(in_use.get(name, 0) + sum(dict(ad.consumed).get(name, 0) for ad in returning)
                                 > value for name, value in _capacities(dv.devices[key]).items()):
            return True
    if not back:
        return False
    consumed, users = _counters_in_use(dv)
    return any(consumed[key] + extra > dv.state.counters.get(key[0], {}).get(key[1], 0)
               and any(dv.power(view, a) > prio for k in users[key] for a in dv.users.get(k, ()))
               for key, extra in back.items())


# The DRA state names nodes and tolerations in the snapshot's words; the verifier judges them with
# its own predicates (read.term_holds, read.tolerated), never the model's.
def _term(term: s.NodeSelectorTerm) -> read.Term:
    return (tuple((r.key, r.operator, tuple(r.values)) for r in term.match_expressions),
            tuple((r.key, r.operator, tuple(r.values)) for r in term.match_fields))


def _toleration(tol: s.Toleration) -> read.Toleration:
    return (tol.key, tol.operator, tol.value, tol.effect)
