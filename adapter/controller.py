"""One reconcile: cached objects -> the snapshot to plan -> a plan -> its execution.

Thin on purpose: which pods go where, and which victims go, is the solver's. Here:

- **What is planned** (``solver.kube.selection.select``, shared with ``gangplace solve
  --scheduler-name``). Pending pods whose ``spec.schedulerName`` is ours, of workloads that
  are ready as upstream means it: every PodGroup of the tree exists and each needed group
  has at least minCount pods observed (a CompositePodGroup needs minGroupCount ready
  children). Pods of other schedulers are running background or ignored. A terminating pod
  (deletionTimestamp set) is passed on as it is: the solver keeps its room held until it is
  gone and never evicts it again, and an ongoing preemption (a preemptor nominated to a node
  where its victim terminates) evicts nothing new.
- **Execution, each step idempotent**: mark the pods that land where victims go with
  ``status.nominatedNodeName`` (as upstream's preemption does), evict the victims (with
  ``--pdb-policy strict``, the default, through the Eviction API: a 429 from a PDB means
  replan, not retry; with ``soft``, as kube-scheduler does: the DisruptionTarget condition
  and a delete), wait until they are gone (timeout: replan),
  write DRA allocations (creating a template's claim, as the
  ResourceClaim controller would, then ``status.allocation`` and ``reservedFor``), add each pod
  to the ``reservedFor`` of the claims it uses that were allocated before, write what
  VolumeBinding's PreBind writes for each claim waiting for its first consumer (the chosen
  volume's ``spec.claimRef``, the smallest available one on the node, or the claim's
  ``volume.kubernetes.io/selected-node`` for its provisioner: without it the kubelet waits for
  the claim forever; a conflict means replan), bind every pod, 8 at a time (a 409 is
  "already bound": fine if to the planned node, else replan once the other bindings are done),
  set the PodGroup condition ``PodGroupInitiallyScheduled`` and emit Events.
- **Crash safety** follows: a restart rebuilds the view from the cluster, pods bound before
  the crash are running members (they count toward minCount and fix the domain), evicted
  pods still terminating are not victims again, and every write is skipped when the
  cluster already shows it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from adapter.cluster import Cluster, Conflict, Refused, now
from solver.core.plan import Binding, Plan, WorkloadVerdict
from solver.core.snapshot import POD_GROUP, STANDALONE_POD
from solver.kube.dra import EXTENDED_CLAIM, extended_resource_classes, parse_device_class
from solver.kube.pods import parse_node
from solver.kube.selection import key as _key
from solver.kube.selection import pending as _pending
from solver.kube.volumes import prebind
from solver.problem.build import DEFAULT_PDB_POLICY, PdbPolicy

LOG = logging.getLogger("gangplace.adapter")
EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"  # resourceapi.ExtendedResourceClaimAnnotation
Obj = dict[str, Any]
CONDITION = "PodGroupInitiallyScheduled"
POD_SCHEDULED, UNSCHEDULABLE = "PodScheduled", "Unschedulable"  # v1.PodScheduled, v1.PodReasonUnschedulable
GATED = "SchedulingGated"  # v1.PodReasonSchedulingGated: not attempted yet (record_waiting)
def _members(w: WorkloadVerdict, pods: dict[str, Obj]) -> list[str]:
    """The pods of a workload's verdict: a standalone pod itself, else those of its PodGroups."""
    if w.kind == STANDALONE_POD:
        return [w.name] if w.name in pods else []
    groups = {g.name for g in w.groups if g.kind == POD_GROUP}
    return sorted(k for k, p in pods.items()
                  if f"{k.split('/', 1)[0]}/{p.get('spec', {}).get('schedulingGroup', {}).get('podGroupName')}"
                  in groups)


def gone(now: Obj | None, uid: str | None) -> bool:
    """The pod of ``uid`` is gone: deleted, or replaced by another of its name (another uid,
    as a StatefulSet recreates it). Without a uid only deletion counts."""
    return now is None or (uid is not None and now["metadata"].get("uid") != uid)


def _claim_name(owner: Obj, entry: Obj) -> str | None:
    """The ResourceClaim a pod's (or PodGroup's) claim entry stands for: the one it names, or
    the one made from its template, as its status.resourceClaimStatuses names it (None: not
    made yet)."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    made = (owner.get("status") or {}).get("resourceClaimStatuses") or []
    return next((str(m["resourceClaimName"]) for m in made
                 if m.get("name") == entry.get("name") and m.get("resourceClaimName")), None)


# ---- execution ---------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    replan: str = ""  # why the plan was abandoned midway ("" when carried out)
    evicted: list[str] = field(default_factory=list)
    evicted_uids: dict[str, str | None] = field(default_factory=dict)  # of the victims, as planned
    bound: list[str] = field(default_factory=list)
    # the conditions written, (kind, "ns/name", type, status, message): the next plan waits to
    # see them, as it waits for the bindings, so it does not write them again from a stale view
    conditions: list[tuple[str, str, str, str, str]] = field(default_factory=list)


@dataclass(slots=True)
class Executor:
    cluster: Cluster
    wait_timeout: float = 60.0
    poll: float = 0.05
    sleep: Callable[[float], None] = time.sleep
    parallel: int = 8  # bindings in flight at once (the client's pool is Cluster.POOL connections)
    # checked before every eviction, before the allocations and before the bindings: a replica
    # that lost its lease stops, so it and the new leader never both act on a plan
    leading: Callable[[], bool] = lambda: True
    # "ns/name" -> the pod as last seen, for waiting on victims (the adapter passes its watch
    # cache, so the wait costs no requests); None: GET each one
    lookup: Callable[[str], Obj | None] | None = None
    # how the plans it carries out were made: "strict" evicts through the Eviction API, "soft"
    # deletes the victims as kube-scheduler's preemption does (a soft plan may break a budget)
    pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY
    # (ns, name, uid) of the PodGroups record_settled wrote the condition of: until the watch
    # cache shows it, a later reconcile does not write it again from its stale view
    settled: set[tuple[str, str, str]] = field(default_factory=set)

    def execute(self, plan: Plan, objects: list[Obj]) -> Outcome:
        out = Outcome()
        pods = {_key(o): o for o in objects if o["kind"] == "Pod"}
        groups = {_key(o): o for o in objects if o["kind"] == "PodGroup"}
        # 1. evict, the pods that wait for the victims' room nominated first
        for i, e in enumerate(plan.evictions):
            if not self.leading():
                return replace(out, replan="the lease was lost")
            if i == 0:
                self._nominate(plan, pods)
            victim = pods.get(e.pod)
            ns, name = e.pod.split("/", 1)
            if victim is not None:
                for_ = sorted(b.pod for b in plan.bindings if b.node == e.node)
                who = f"pod {for_[0]}" + (f" and {len(for_) - 1} more" if len(for_) > 1 else "") if for_ else "a pod"
                self.event(ns, victim, "Preempted", f"Preempted by gangplace for {who} on node {e.node} "
                           f"(cost {e.cost:g})", "Normal", "Preempting",
                           related=pods.get(for_[0]) if for_ else None)
            try:
                if self.pdb_policy == "soft":
                    self.cluster.preempt(ns, name, "gangplace: preempting to accommodate a higher priority gang")
                else:
                    self.cluster.evict(ns, name)
            except Refused as exc:
                return replace(out, replan=f"eviction refused: {exc}")
            out.evicted.append(e.pod)
            out.evicted_uids[e.pod] = victim["metadata"].get("uid") if victim is not None else None
        # 2. wait until they are gone (other terminating pods' room the plan did not count on)
        leaving = [e.pod for e in plan.evictions]
        if not self._gone(leaving, pods):
            return replace(out, replan="evicted pods did not terminate in time")
        if not self.leading():
            return replace(out, replan="the lease was lost")
        # 3. devices
        # one write per claim: all its requests' results together (a merge patch replaces the list)
        per_claim: dict[tuple[str, str, str], list[Any]] = {}
        for alloc in plan.device_allocations:
            per_claim.setdefault((alloc.pod, alloc.pod_group, alloc.claim), []).append(alloc)
        bound = [pods[b.pod] for b in plan.bindings if b.pod in pods]
        for allocs in per_claim.values():
            self._allocate(allocs, pods, groups, objects, bound)
        if changed := self._reserve(plan, pods, objects):
            return replace(out, replan=changed)
        if changed := self._volumes(plan, objects):
            return replace(out, replan=changed)
        # 4. bind, up to `parallel` at a time; a pod bound elsewhere (a 409) abandons the plan, the
        # other bindings still complete
        with ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="gangplace-bind") as pool:
            placed = list(pool.map(lambda b: self._bind(b, pods), plan.bindings))
        out.bound = [b.pod for b, ok in zip(plan.bindings, placed, strict=True) if ok]
        if elsewhere := [b.pod for b, ok in zip(plan.bindings, placed, strict=True) if not ok]:
            return replace(out, replan=f"{', '.join(elsewhere)} bound elsewhere")
        # 5. status
        self._conditions(plan, groups, pods, out.conditions)
        return out

    def _nominate(self, plan: Plan, pods: dict[str, Obj]) -> None:
        """status.nominatedNodeName of each pod bound where a victim goes (unless it shows it)."""
        victim_nodes = {e.node for e in plan.evictions}
        waiting = [b for b in plan.bindings if b.node in victim_nodes and b.pod in pods
                   and pods[b.pod].get("status", {}).get("nominatedNodeName") != b.node]
        with ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="gangplace-nominate") as pool:
            list(pool.map(self._nominate_one, waiting))

    def _nominate_one(self, b: Binding) -> None:
        ns, name = b.pod.split("/", 1)
        self.cluster.nominate(ns, name, b.node)

    def _bind(self, b: Binding, pods: dict[str, Obj]) -> bool:
        """One binding and its Scheduled event; False when the pod is bound to another node."""
        ns, name = b.pod.split("/", 1)
        try:
            self.cluster.bind(ns, name, b.node)
        except Conflict:
            now = self.cluster.get_pod(ns, name)
            if now is None or now.get("spec", {}).get("nodeName") != b.node:
                return False
        if b.pod in pods:
            self.event(ns, pods[b.pod], "Scheduled", f"Successfully assigned {b.pod} to {b.node}", "Normal",
                        "Binding")
        return True

    def record_settled(self, objects: list[Obj], scheduler_name: str) -> None:
        """PodGroups of ours whose pods are all bound but which carry no condition yet (the
        adapter died between the last binding and the status write): record it now."""
        members_of: dict[tuple[str, str], list[Obj]] = {}
        for o in objects:
            if o["kind"] == "Pod" and not o["metadata"].get("deletionTimestamp") and \
                    (g := o.get("spec", {}).get("schedulingGroup", {}).get("podGroupName")):
                members_of.setdefault((o["metadata"].get("namespace", ""), g), []).append(o)
        for g in objects:
            ns, name = g["metadata"].get("namespace", ""), g["metadata"]["name"]
            mark = (ns, name, str(g["metadata"].get("uid") or ""))
            if g["kind"] != "PodGroup" or any(c.get("type") == CONDITION
                                               for c in g.get("status", {}).get("conditions", [])):
                self.settled.discard(mark)  # shown now (or not a group): nothing to remember
                continue
            if mark in self.settled:
                continue  # written already; the cache has not caught up
            members = members_of.get((ns, name), [])
            floor = (g.get("spec", {}).get("schedulingPolicy", {}).get("gang") or {}).get("minCount") or 1
            if len(members) >= floor and all(p["spec"].get("nodeName") for p in members) and any(
                    p["spec"].get("schedulerName") == scheduler_name for p in members):
                self.cluster.set_podgroup_condition(ns, name, {
                    "type": CONDITION, "status": "True", "reason": "Scheduled",
                    "message": f"{len(members)} pods placed by gangplace", "lastTransitionTime": now()})
                self.settled.add(mark)

    def _gone(self, keys: list[str], pods: dict[str, Obj]) -> bool:
        """Wait until every pod is deleted; one of the same name but another uid (a StatefulSet
        recreating it) is a new pod, so the one waited for is gone."""
        deadline = time.monotonic() + self.wait_timeout
        uid = {k: pods[k]["metadata"].get("uid") if k in pods else None for k in keys}
        look = self.lookup or (lambda k: self.cluster.get_pod(*k.split("/", 1)))
        left = list(dict.fromkeys(keys))
        while left:
            left = [k for k in left if not gone(look(k), uid[k])]
            if not left:
                return True
            if time.monotonic() > deadline:
                return False
            self.sleep(self.poll)
        return True

    def _conditions(self, plan: Plan, groups: dict[str, Obj], pods: dict[str, Obj],
                    written: list[tuple[str, str, str, str, str]]) -> None:
        self._unschedulable(plan, pods, written)
        for w in plan.workloads:
            for g in w.groups:
                obj = groups.get(g.name)
                if obj is None or g.kind != "PodGroup":
                    continue
                if w.satisfied:
                    cond = {"type": CONDITION, "status": "True", "reason": "Scheduled",
                            "message": f"{g.placed_pods} pods placed by gangplace"}
                else:
                    cond = {"type": CONDITION, "status": "False", "reason": "Unschedulable",
                            "message": w.reason or "the gang does not fit"}
                have = next((c for c in obj.get("status", {}).get("conditions", []) if c.get("type") == CONDITION),
                            None)
                if have and have.get("status") == cond["status"] and have.get("message") == cond["message"]:
                    continue  # already recorded: write nothing
                ns, name = g.name.split("/", 1)
                self.cluster.set_podgroup_condition(ns, name, {**cond, "lastTransitionTime": now()})
                written.append(("PodGroup", g.name, CONDITION, cond["status"], cond["message"]))

    def _unschedulable(self, plan: Plan, pods: dict[str, Obj], written: list[tuple[str, str, str, str, str]]) -> None:
        """Every pending pod of a workload the plan leaves out gets ``PodScheduled=False``,
        reason ``Unschedulable``, the workload's reason as its message: what kube-scheduler's
        handleSchedulingFailure writes, and what Cluster Autoscaler and Karpenter look for before
        they scale up. Binding makes the API server set it True. Written once per message."""
        bound = {b.pod for b in plan.bindings}
        for w in plan.workloads:
            if w.satisfied:
                continue
            message = w.reason or "the gang does not fit"
            written.extend(("Pod", k, POD_SCHEDULED, "False", message) for k in _members(w, pods)
                           if k not in bound and self._tell_pending(pods[k], k, message))

    def record_waiting(self, held: dict[str, str], pods: dict[str, Obj]) -> None:
        """Pods of ours not attempted yet (a PodGroup not created, a gang short of its minCount:
        ``Selection.held``) say why: an Event as for a pod a plan leaves pending, and the
        condition with reason ``SchedulingGated``, not ``Unschedulable``: kube-scheduler writes
        nothing for a pod its PreEnqueue holds back, and Cluster Autoscaler scales up for
        ``Unschedulable`` pods, which a node more would not help here."""
        for k, why in held.items():
            if (p := pods.get(k)) is not None:
                self._tell_pending(p, k, why, GATED)

    def _tell_pending(self, p: Obj, k: str, message: str, reason: str = UNSCHEDULABLE) -> bool:
        """``PodScheduled=False`` with ``reason`` and ``message`` and a ``FailedScheduling``
        Event on a pending pod, once per message (upstream's recorder writes an Event per failed
        attempt; the message changing is this adapter's attempt). Whether anything was written."""
        if not _pending(p):
            return False
        have = next((c for c in p.get("status", {}).get("conditions", []) if c.get("type") == POD_SCHEDULED), None)
        if have and (have.get("status"), have.get("reason"), have.get("message")) == ("False", reason, message):
            return False
        ns, name = k.split("/", 1)
        # the Event first: a process that dies between the two writes the pair again (Events are
        # best effort and may repeat), where the other order would lose the Event for good
        self.event(ns, p, "FailedScheduling", message, "Warning", "Scheduling")
        self.cluster.set_pod_condition(ns, name, {
            "type": POD_SCHEDULED, "status": "False", "reason": reason, "message": message,
            "lastProbeTime": None, "lastTransitionTime": now()})
        return True

    def isolated(self, objects: list[Obj], tree: set[str], bad: str, why: str) -> None:
        """A workload left out because of a bad object: its PodGroups say so (condition False,
        reason SchedulerError, as upstream's updatePodGroupConditionWithError), once."""
        message = f"{bad} is invalid: {why}"
        for o in objects:
            if o.get("kind") != "PodGroup" or _key(o) not in tree:
                continue
            have = next((c for c in (o.get("status") or {}).get("conditions", []) if c.get("type") == CONDITION), None)
            if have and have.get("status") == "False" and have.get("message") == message:
                continue
            ns, name = _key(o).split("/", 1)
            try:
                self.cluster.set_podgroup_condition(ns, name, {"type": CONDITION, "status": "False",
                                                               "reason": "SchedulerError", "message": message,
                                                               "lastTransitionTime": now()})
            except Exception as exc:  # best effort: the next reconcile writes it again
                LOG.info(json.dumps({"event": "condition-failed", "group": _key(o), "error": str(exc)}))

    def _allocate(self, allocs: list[Any], pods: dict[str, Obj], groups: dict[str, Obj], objects: list[Obj],
                  bound: list[Obj]) -> None:
        """Write one claim's allocation (every request of it): the claim, made from its template
        when needed and named in its owner's status.resourceClaimStatuses, then its status,
        reserved for its owner and (a claim several pods the plan binds name) those pods."""
        first = allocs[0]
        owner = pods.get(first.pod) if first.pod else groups.get(first.pod_group)
        if owner is None:
            return
        ns, owner_name = owner["metadata"]["namespace"], owner["metadata"]["name"]
        if first.pod and first.claim == EXTENDED_CLAIM:
            self._allocate_extended(allocs, owner, objects)
            return
        entries = owner.get("spec", {}).get("resourceClaims", [])
        entry = next((e for e in entries if e.get("name") == first.claim), None)
        if entry is None:
            return
        claim_name = _claim_name(owner, entry)
        results = [{"request": a.request, **d.to_dict()} for a in allocs for d in a.devices]
        users = [owner] + [p for p in bound if p is not owner and claim_name and p["metadata"]["namespace"] == ns
                           and any(e.get("resourceClaimName") == claim_name
                                   for e in p.get("spec", {}).get("resourceClaims", []) or [])]
        reserved = ([{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"].get("uid", "")}
                     for p in users] if first.pod else
                    [{"resource": "podgroups", "apiGroup": "scheduling.k8s.io", "name": owner_name,
                      "uid": owner["metadata"].get("uid", "")}])
        if claim_name is None:  # from a template, and kube-controller-manager's resourceclaim controller
            # has not made it yet (kube-scheduler only waits for it): make it as that controller would
            template = next((o for o in objects if o["kind"] == "ResourceClaimTemplate"
                             and _key(o) == f"{ns}/{entry['resourceClaimTemplateName']}"), None)
            if template is None:
                return
            claim_name = f"{owner_name}-{first.claim}"
            meta: dict[str, Any] = {"name": claim_name, "namespace": ns}
            if first.pod and owner["metadata"].get("uid"):  # owned by the pod, so the controller adopts it
                meta["annotations"] = {"resource.kubernetes.io/pod-claim-name": first.claim}
                meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner_name,
                                            "uid": owner["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]
            try:
                self.cluster.create_claim(ns, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                               "metadata": meta, "spec": template.get("spec", {}).get("spec", {})})
            except Conflict:
                pass  # made before a crash: fill it in
            status = [{"name": first.claim, "resourceClaimName": claim_name}]
            if first.pod:
                self.cluster.set_pod_claim_statuses(ns, owner_name, status)
            else:  # the PodGroup names it, so later plans and a restart see the group's claim
                self.cluster.set_podgroup_claim_statuses(ns, owner_name, status)
        self.cluster.set_claim_allocation(ns, claim_name, {"allocation": {"devices": {"results": results}},
                                                           "reservedFor": reserved})

    def _volumes(self, plan: Plan, objects: list[Obj]) -> str:
        """Each bound pod's claims that wait for their first consumer get what kube-scheduler's
        VolumeBinding PreBind writes (``volumes.prebind``): the volume's claimRef, or the claim's
        selected-node annotation for its provisioner. One write each, over the object as seen:
        one changed since means replan (its why)."""
        by_kind: dict[str, list[Obj]] = {}
        for o in objects:
            by_kind.setdefault(o["kind"], []).append(o)
        if not by_kind.get("PersistentVolumeClaim"):
            return ""
        nodes = {n.name: n for n in (parse_node(o) for o in by_kind.get("Node", ()))}
        for vb in prebind(by_kind, [(b.pod, b.node) for b in plan.bindings], nodes):
            try:
                if vb.volume:
                    self.cluster.bind_volume(vb.volume, vb.namespace, vb.claim, vb.claim_uid, vb.volume_version)
                else:
                    self.cluster.select_node(vb.namespace, vb.claim, vb.node, vb.claim_version)
            except Conflict:
                return f"PersistentVolumeClaim {vb.namespace}/{vb.claim} or its volume changed before its binding"
        return ""

    def _reserve(self, plan: Plan, pods: dict[str, Obj], objects: list[Obj]) -> str:
        """Each pod bound with a claim allocated before this plan joins its ``reservedFor``, as
        kube-scheduler's PreBind does (dynamicresources ``bindClaim``): the kubelet prepares a
        claim's devices only for the pods it is reserved for. A claim reserved for the pod, or
        for the pod's PodGroup, needs nothing. One write per claim, the whole list (a merge
        patch replaces it), over the claim as seen: one changed since means replan (its why)."""
        claims = {_key(o): o for o in objects if o["kind"] == "ResourceClaim"}
        joining: dict[str, list[Obj]] = {}
        for b in plan.bindings:
            pod = pods.get(b.pod)
            if pod is None:
                continue
            ns = pod["metadata"]["namespace"]
            group = (pod.get("spec", {}).get("schedulingGroup") or {}).get("podGroupName")
            for entry in pod.get("spec", {}).get("resourceClaims", []) or []:
                name = _claim_name(pod, entry)
                claim = claims.get(f"{ns}/{name}") if name else None
                status = (claim or {}).get("status") or {}
                if not status.get("allocation"):
                    continue  # none, or allocated by this plan for its owner
                reserved = status.get("reservedFor") or []
                mine = {("pods", pod["metadata"]["name"]), ("podgroups", group)}
                if any((r.get("resource"), r.get("name")) in mine for r in reserved):
                    continue
                joining.setdefault(f"{ns}/{name}", []).append(pod)
        for key, new in sorted(joining.items()):
            ns, name = key.split("/", 1)
            reserved = list((claims[key].get("status") or {}).get("reservedFor") or [])
            reserved += [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"].get("uid", "")}
                         for p in new]
            try:
                self.cluster.reserve_claim(ns, name, reserved, claims[key]["metadata"].get("resourceVersion", ""))
            except Conflict:
                return f"ResourceClaim {key} changed before its reservation"
        return ""

    def _allocate_extended(self, allocs: list[Any], pod: Obj, objects: list[Obj]) -> None:
        """The claim kube-scheduler makes at PreBind for a pod's extended resources that DRA
        serves (plugins/dynamicresources/extendeddynamicresources.go): owned by the pod, marked
        by the extended-resource-claim annotation, one request per planned request, allocated
        and reserved for the pod; the pod's status.extendedResourceClaimStatus names it and maps
        each container's resource to its request (the kubelet hands the devices over by it)."""
        ns, name, uid = pod["metadata"]["namespace"], pod["metadata"]["name"], pod["metadata"].get("uid", "")
        classes = extended_resource_classes(parse_device_class(o) for o in objects if o["kind"] == "DeviceClass")
        spec = pod.get("spec", {})
        containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
        requests, mappings = [], []
        for a in sorted(allocs, key=lambda a: a.request):  # "container-<i>-request-<resource index>"
            _, index, _, which = a.request.split("-")
            container = containers[int(index)]
            resource = sorted(container.get("resources", {}).get("requests", {}))[int(which)]
            requests.append({"name": a.request, "exactly": {"deviceClassName": classes[resource],
                                                            "allocationMode": "ExactCount",
                                                            "count": len(a.devices)}})
            mappings.append({"containerName": container.get("name", ""), "resourceName": resource,
                             "requestName": a.request})
        claim_name = f"{name}-extended-resources"
        meta = {"name": claim_name, "namespace": ns, "annotations": {EXTENDED_ANNOTATION: "true"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid,
                                     "controller": True, "blockOwnerDeletion": True}]}
        try:
            self.cluster.create_claim(ns, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                           "metadata": meta, "spec": {"devices": {"requests": requests}}})
        except Conflict:
            pass  # made before a crash: fill it in
        results = [{"request": a.request, **d.to_dict()} for a in allocs for d in a.devices]
        self.cluster.set_claim_allocation(ns, claim_name, {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": name, "uid": uid}]})
        self.cluster.set_pod_extended_claim(ns, name, {"resourceClaimName": claim_name, "requestMappings": mappings})

    def event(self, ns: str, obj: Obj, reason: str, note: str, type_: str, action: str,
              related: Obj | None = None) -> None:
        try:
            self.cluster.event(namespace=ns, regarding=obj, reason=reason, note=note, type_=type_, action=action,
                               related=related)
        except Exception as exc:  # an event is best effort, as upstream's recorder
            LOG.info(json.dumps({"event": "event-failed", "reason": reason, "error": str(exc)}))
