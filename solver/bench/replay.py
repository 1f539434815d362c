"""A plan carried out on a fresh real control plane, as the adapter would, to see whether the
real API server and kube-scheduler 1.37.2 take it.

``replay(objects, plan, strict=...)`` loads the snapshot's background into a fresh control
plane (``solver.bench.controlplane``) by ``solver.bench.upstream``'s rules: nodes, classes,
volumes, groups, DRA objects, PDBs with their recorded status, the running pods bound where
they run. Then it does what the plan says:

1. the plan's evictions, in its order, as the adapter's ``--pdb-policy`` does them: under
   ``strict`` through the Eviction API (a policy/v1 Eviction POSTed on
   ``pods/NAME/eviction``, which a PodDisruptionBudget may refuse: 429, or 500 for a pod two
   budgets select); under ``soft`` as kube-scheduler's preemption does (the DisruptionTarget
   condition, then a DELETE, which no budget refuses). Every refusal is recorded with its
   status code and message. Running pods have terminationGracePeriodSeconds 0, so an
   accepted eviction removes the pod at once, as a kubelet that confirms at once would;
2. the planned pending pods, and only those, each PINNED to its planned node: a required
   node-affinity requirement ``matchFields metadata.name In [node]`` is added to every
   required term the pod has (terms are ORed, so each gets it), or is its one term. Pending
   pods the plan does not place are not created: the replay judges what the plan does, not
   what the real scheduler would do with the rest;
3. the real kube-scheduler with its default profile, so every default filter (and its
   preemption, should a pinned pod not fit) runs on each pod; it runs until every planned pod
   is bound, or it settles as in ``upstream.run_kube_scheduler``.

The outcome: the refused evictions, where the planned pods were bound, the running pods that
went without the plan evicting them (the real scheduler preempted them: the plan's room was
not enough), the planned pods left pending, and whether the run settled.

The disruption controller does not run, so a budget's status stays as recorded and the
Eviction API judges it by that status (its observedGeneration is set to the budget's
generation on load, and checked here). The resourceclaim controller runs, with the recorded
claims' reservations pointing at the running pods as created and the delete-protection
finalizer that a claim the scheduler allocated carries: a claim of an evicted pod is
deallocated as on a real cluster, and a pending pod's claims are made from its templates.
The PersistentVolume binder runs too, so a WaitForFirstConsumer claim the scheduler binds at
PreBind completes; a recorded volume's claimRef is pointed at its claim as created (the
binder marks the claim Lost otherwise). The plan's device allocations are not written: the scheduler allocates the
devices on the pinned node itself (so the replay says there is an allocation there, not that
it is the plan's).

The API server's and the scheduler's gates are run_kube_scheduler's: every Workload-Aware
Scheduling gate of ``controlplane.API_GATES`` on (CompositePodGroup included) but
PodGroupPreemptionPolicy, off as 1.37 has it (the plan's FeatureGates default).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from solver.bench import upstream
from solver.bench.controlplane import ControlPlane
from solver.core.errors import Kind, SolverError

Obj = dict[str, Any]

CONTROLLERS = upstream.CONTROLLERS
GATES = {"PodGroupPreemptionPolicy": False}


class ReplayError(SolverError):
    """The replay could not be staged: a budget whose recorded status the API server does not
    take as observed, or a plan that binds a pod the snapshot does not hold pending."""

    kind = Kind.INPUT


@dataclass
class ReplayResult:
    planned: dict[str, str]  # pod -> node, as the plan binds
    evicted: list[str]  # evictions the API server accepted, in the plan's order
    refused: dict[str, str]  # pod -> "STATUS message" of each eviction refused
    bindings: dict[str, str]  # pod -> node of every planned pod the scheduler bound
    deleted: list[str]  # running pods that went without the plan evicting them
    pending: list[str]  # planned pods left unbound
    settled: bool  # the scheduler settled (else the timeout ended the run)
    seconds: float = 0.0  # wall time of the whole replay, control plane start included
    # what the cluster did not do on its side: an evicted pod or its claim that did not go, a
    # claim of a running pod the resourceclaim controller freed
    notes: list[str] = field(default_factory=list)
    skipped_kinds: dict[str, int] = field(default_factory=dict)  # not loaded (upstream.Loaded.skipped)

    @property
    def misplaced(self) -> dict[str, tuple[str, str]]:
        """pod -> (planned node, node bound) where they differ."""
        return {p: (self.planned[p], n) for p, n in self.bindings.items() if self.planned.get(p) != n}

    def problems(self) -> list[str]:
        """Each way the real control plane did not take the plan, one sentence each (empty: it
        took it whole)."""
        out = [f"eviction of {p} refused: {why}" for p, why in self.refused.items()]
        out += [f"{p} bound to {n}, planned on {want}" for p, (want, n) in sorted(self.misplaced.items())]
        out += [f"{p} left pending (planned on {self.planned[p]})" for p in self.pending]
        out += [f"{p} deleted, which the plan does not evict" for p in self.deleted]
        if not self.settled:
            out.append("the scheduler did not settle before the timeout")
        return out + self.notes


def pin(pod: Obj, node: str) -> Obj:
    """``pod`` with a required node-affinity requirement on ``metadata.name`` = ``node`` in
    every required term (terms are ORed; requirements within a term ANDed)."""
    out = copy.deepcopy(pod)
    requirement = {"key": "metadata.name", "operator": "In", "values": [node]}
    required = (out["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
                .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {}))
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        term["matchFields"] = [*term.get("matchFields", []), requirement]
    required["nodeSelectorTerms"] = terms
    return out


def _key(o: Mapping[str, Any]) -> str:
    return f"{o['metadata'].get('namespace') or 'default'}/{o['metadata']['name']}"


def _check_budgets(rest: upstream.Rest, objects: Iterable[Obj]) -> None:
    """Every budget's recorded status is observed at its generation (else the Eviction API
    refuses every eviction it covers, whatever the plan)."""
    for o in objects:
        if o.get("kind") != "PodDisruptionBudget" or not o.get("status"):
            continue
        got = rest.call("GET", upstream.path_of(o, named=True))
        if got.get("status", {}).get("observedGeneration") != got["metadata"].get("generation"):
            raise ReplayError(f"PodDisruptionBudget {_key(o)}: status observed at generation "
                              f"{got.get('status', {}).get('observedGeneration')}, not "
                              f"{got['metadata'].get('generation')}")


def _evict(rest: upstream.Rest, key: str, *, strict: bool) -> str | None:
    """The adapter's eviction of ``key`` ("ns/name"); None when accepted, else "STATUS message"."""
    ns, name = key.split("/", 1)
    path = f"/api/v1/namespaces/{ns}/pods/{name}"
    if strict:
        status, body = rest.request("POST", f"{path}/eviction", {
            "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})
        return None if status < 300 else f"{status} {upstream.message_of(body)}"
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                 "message": "gangplace: preempting to accommodate a higher priority gang",
                 "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    status, body = rest.request("PATCH", f"{path}/status", {"status": {"conditions": [condition]}},
                                content_type="application/strategic-merge-patch+json")
    if status < 300:
        status, body = rest.request("DELETE", path)
    return None if status < 300 else f"{status} {upstream.message_of(body)}"


def _allocated_claims(objects: Iterable[Obj]) -> dict[str, set[str]]:
    """Recorded allocated claims -> the pods ("ns/name") they are reserved for."""
    out = {}
    for o in objects:
        status = o.get("status") or {}
        if o.get("kind") == "ResourceClaim" and status.get("allocation"):
            ns = o["metadata"].get("namespace") or "default"
            out[_key(o)] = {f"{ns}/{r['name']}" for r in status.get("reservedFor") or []
                            if r.get("resource") == "pods" and not r.get("apiGroup")}
    return out


def _is_allocated(rest: upstream.Rest, claim: str) -> bool:
    ns, name = claim.split("/", 1)
    status, body = rest.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims/{name}")
    return status == 200 and bool((body.get("status") or {}).get("allocation"))


def _wait_gone(rest: upstream.Rest, keys: Iterable[str], claims: Mapping[str, set[str]], timeout: float) -> list[str]:
    """Wait until the evicted pods are gone and every claim reserved for them alone is
    deallocated (the adapter waits for its victims' room); returns what did not happen."""
    keys = set(keys)
    freed = [c for c, users in claims.items() if users and users <= keys]
    deadline = time.monotonic() + timeout
    while True:
        left = [k for k in sorted(keys)
                if rest.request("GET", "/api/v1/namespaces/{}/pods/{}".format(*k.split("/", 1)))[0] != 404]
        left += [f"claim {c} still allocated" for c in freed if _is_allocated(rest, c)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def replay(objects: Iterable[Mapping[str, Any]], plan: Any, *, strict: bool, settle: float = 3.0,
           timeout: float = 120.0) -> ReplayResult:
    """Carry out ``plan`` (a solver.core.plan.Plan of the snapshot ``objects``, flattened) on a
    fresh control plane and report what the real API server and kube-scheduler did (module
    docstring). Pending pods the plan does not bind are not created."""
    started = time.monotonic()
    docs = [dict(o) for o in objects]
    planned = {b.pod: b.node for b in plan.bindings}
    victims = [e.pod for e in plan.evictions]
    unknown = sorted(set(planned) - {_key(o) for o in docs if o.get("kind") == "Pod" and
                                     not (o.get("spec") or {}).get("nodeName")})
    if unknown:
        raise ReplayError(f"the plan binds pods the snapshot does not hold pending: {', '.join(unknown)}")
    plane = ControlPlane.start(api_gates=GATES)
    rest = upstream.Rest(plane)
    watcher: upstream.Watch | None = None
    try:
        loaded, pending = upstream.load_background(rest, docs)
        _check_budgets(rest, docs)
        upstream.own_claims(rest, docs)
        upstream.own_volumes(rest, docs)
        plane.start_controller_manager(CONTROLLERS)
        rv = rest.call("GET", "/api/v1/pods", query=[("limit", "1")])["metadata"]["resourceVersion"]
        watcher = upstream.Watch(rest, rv)
        watcher.start()
        evicted, refused = [], {}
        for key in victims:
            why = _evict(rest, key, strict=strict)
            if why is None:
                evicted.append(key)
            else:
                refused[key] = why
        claims = _allocated_claims(docs)
        notes = [f"not gone after eviction: {k}" for k in _wait_gone(rest, evicted, claims, timeout=30)]
        by_key = {_key(p): p for p in pending}
        upstream.each_in_parallel(rest.create, [pin(by_key[k], n) for k, n in sorted(planned.items())])
        plane.start_scheduler(GATES)
        settled = upstream.wait_until_settled(plane, watcher, set(planned), settle=settle,
                                              deadline=time.monotonic() + timeout, until_bound=True)
        watcher.finish()
        # what runs keeps its devices: the controller must not have freed a claim the plan left in use
        notes += [f"claim {c} of running pods deallocated" for c, users in claims.items()
                  if users and not users <= set(evicted) and not _is_allocated(rest, c)]
        bindings = {k: n for k, (n, _) in watcher.bound.items() if k in planned}
        deleted = sorted(k for k in watcher.deleted if k in set(loaded.running) and k not in evicted)
        return ReplayResult(planned=planned, evicted=evicted, refused=refused, bindings=bindings, deleted=deleted,
                            pending=sorted(set(planned) - bindings.keys()), settled=settled,
                            seconds=round(time.monotonic() - started, 1), notes=notes,
                            skipped_kinds=loaded.skipped)
    finally:
        if watcher is not None:
            watcher.finish()
        rest.close()
        plane.stop()
