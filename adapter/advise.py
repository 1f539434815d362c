"""Advice for kube-scheduler (issue 49): the current plan, ready before a scheduling cycle asks.

An ``Advisor`` keeps the cluster from its own watch (the adapter's ``WatchCache``), plans every
pending workload of the scheduler it advises whenever the cluster changes (one plan at a time; a
change during a plan starts the next one), and answers ``Advise`` from the latest plan at once:
the workload's pods and nodes, the plan's victims on those nodes, the plan's status, how long the
cluster has been ahead of it (its age), whether it considered the workload at all, and the
resourceVersion of the workload's object the plan was made from. It binds, evicts and
writes nothing: kube-scheduler does, through the gangplace plugin, which treats an answer that
is not ``planned`` (or older than its own deadline) as no advice and does what upstream would.

A workload is named as the plan names it: the root PodGroup or CompositePodGroup, or a pod
outside any group ("Pod"), by namespace and name. A pending pod of a group may be named too
("Pod"), as kube-scheduler's per-pod extension points know it: the answer is its workload's.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import grpc

from adapter.cache import WatchCache
from solver.core.errors import SolverError
from solver.core.plan import Binding, Eviction, Objective, Plan, WorkloadVerdict
from solver.core.snapshot import qualified
from solver.gen.gangplace.v1 import placement_pb2 as pb
from solver.gen.gangplace.v1 import placement_pb2_grpc as pb_grpc
from solver.kube.selection import GROUP_KINDS, groups_of, pending, select, tree_of
from solver.kube.selection import key as key_of
from solver.service.server import ListenError, ServerConfig, TokenCheck, listen, tls

LOG = logging.getLogger("gangplace.adapter.advise")
Obj = dict[str, Any]
Solve = Callable[[list[Obj]], Plan]


@dataclass(frozen=True, slots=True)
class Advised:
    """One plan, indexed once when it is made so that each answer is a few look-ups: per
    workload ("Kind/ns/name") its object's resourceVersion, its verdict and its bindings; per
    pending pod its workload; per node the plan's evictions there."""

    plan: Plan
    made: float  # time.monotonic() when the plan was made
    generation: int = 0  # the watch cache's generation the plan was made from
    number: int = 0  # the advisor's plans so far, this one included (AdviseResponse.plan)
    versions: dict[str, str] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # pending pod "ns/name" -> its workload
    verdicts: dict[str, WorkloadVerdict] = field(default_factory=dict)
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    victims: tuple[Eviction, ...] = ()  # the plan's evictions, then the honoured advice's still to go
    evictions: dict[str, list[int]] = field(default_factory=dict)  # node -> the victims there, by index
    roots: dict[str, str] = field(default_factory=dict)  # group "Kind/ns/name" -> its tree's root, likewise
    under: dict[str, frozenset[str]] = field(default_factory=dict)  # pending pod -> the groups above it
    uids: dict[str, str] = field(default_factory=dict)  # pod "ns/name" -> its uid, as the plan saw it

    @classmethod
    def of(cls, plan: Plan, made: float, objects: Iterable[Obj], generation: int = 0,
           honoured: Iterable[Binding] = (), honoured_victims: Iterable[Eviction] = (), number: int = 0) -> Advised:
        """``honoured``: advice handed out lately that the plan took as decided (``Advisor``),
        answered again as it was, with its victims not gone yet (``honoured_victims``)."""
        objects = list(objects)
        pods, versions = workloads_of(objects)
        owner = {pod: workload for workload, members in pods.items() for pod in members}
        bindings: dict[str, list[Binding]] = {}
        for b in (*honoured, *plan.bindings):
            if b.pod in owner:
                bindings.setdefault(owner[b.pod], []).append(b)
        planned = {e.pod for e in plan.evictions}
        victims = (*plan.evictions, *(e for e in honoured_victims if e.pod not in planned))
        evictions: dict[str, list[int]] = {}
        for i, e in enumerate(victims):
            evictions.setdefault(e.node, []).append(i)
        roots, under = hierarchy(objects)
        uids = pod_uids(objects)
        return cls(plan=plan, made=made, generation=generation, number=number, versions=versions, owner=owner,
                   verdicts={qualified(w.kind, w.name): w for w in plan.workloads}, bindings=bindings,
                   victims=victims, evictions=evictions, roots=roots, under=under, uids=uids)

    def victims_for(self, nodes: set[str]) -> list[int]:
        """The plan's victims on ``nodes``, with every other victim of their victim units (a
        unit is evicted whole: an ``all`` group spread over nodes the workload does not take),
        by index in the plan's order."""
        chosen = {i for node in nodes for i in self.evictions.get(node, ())}
        units = {self.victims[i].group for i in chosen} - {""}
        chosen |= {i for i, e in enumerate(self.victims) if e.group in units}
        return sorted(chosen)

    def workload_of(self, kind: str, namespace: str, name: str) -> str:
        """The workload a request names: itself, a grouped pod's workload, or the root of the
        tree a child group (kube-scheduler's PlacementGenerate asks for each) belongs to."""
        named = f"{kind}/{namespace}/{name}"
        if kind == "Pod" and named not in self.versions:
            return self.owner.get(f"{namespace}/{name}", named)
        return self.roots.get(named, named)


def pod_uids(objects: Iterable[Obj]) -> dict[str, str]:
    """Per pod ("ns/name"), its uid ("" when it has none): advice is honoured for the pod it was
    handed out for, not for a pod made again under its name."""
    return {key_of(o): str((o.get("metadata") or {}).get("uid", "")) for o in objects if o.get("kind") == "Pod"}


def hierarchy(objects: Iterable[Obj]) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
    """Per group ("Kind/ns/name"), its tree's root; per pending grouped pod ("ns/name"), every
    group above it (its own and each ancestor's)."""
    objs = list(objects)
    groups = groups_of(objs)
    tree = tree_of(groups)

    def named(k: str) -> str:
        return qualified(groups[k]["kind"], k)

    roots = {named(k): named(tree.root(k)) for k in groups}  # type: ignore[arg-type]  # a GroupKey is a str
    under: dict[str, frozenset[str]] = {}
    for obj in objs:
        if obj.get("kind") != "Pod" or not pending(obj):
            continue
        group = (obj.get("spec", {}).get("schedulingGroup") or {}).get("podGroupName")
        leaf = f"{(obj.get('metadata') or {}).get('namespace', '')}/{group}"
        if group and leaf in groups:
            under[key_of(obj)] = frozenset(named(k) for k in tree.ancestors(leaf))  # type: ignore[arg-type]  # a GroupKey is a str
    return roots, under


def workloads_of(objects: Iterable[Obj]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Per workload ("Kind/ns/name"), its pending pods ("ns/name") and its object's resourceVersion:
    a grouped pod under its tree's root, a pod outside any group alone."""
    objs = list(objects)
    groups = groups_of(objs)
    tree = tree_of(groups)
    pods: dict[str, list[str]] = {}
    versions: dict[str, str] = {}
    for obj in objs:
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if kind in GROUP_KINDS:
            versions[qualified(kind, key_of(obj))] = str(meta.get("resourceVersion", ""))
        if kind != "Pod" or not pending(obj):
            continue
        group = (obj.get("spec", {}).get("schedulingGroup") or {}).get("podGroupName")
        if not group:
            name = f"Pod/{key_of(obj)}"
            versions[name] = str(meta.get("resourceVersion", ""))
            pods.setdefault(name, []).append(key_of(obj))
            continue
        leaf = f"{meta.get('namespace', '')}/{group}"
        if leaf not in tree:
            continue
        root = tree.root(leaf)  # type: ignore[arg-type]  # a GroupKey is a str
        pods.setdefault(qualified(groups[root]["kind"], root), []).append(key_of(obj))
    return pods, versions


def _newer_or_same(have: str, want: str) -> bool:
    """resourceVersions compare as integers (etcd revisions); anything else must be equal."""
    if not want:
        return True
    if have.isdigit() and want.isdigit():
        return int(have) >= int(want)
    return have == want


# the plan of a cluster with no workload ready (every pending gang short of its minCount, or none)
NOTHING_READY = Plan(status="NOTHING_READY", workloads=(), bindings=(), evictions=(), stats={},
                     objective=Objective(satisfied_workloads=0, satisfied_by_priority={}, placed_pods=0,
                                         pdb_violations=0, preemption_cost=0.0, evicted_pods=0,
                                         preemption_cost_bound=0.0, gap=0.0))


# Advice handed out this recently is taken as decided by the next plan: kube-scheduler may be
# binding those pods right now (a PodGroup's cycle, then its bindings), and a plan that moved
# them would send the next group to a node they are about to take. Past it, a pod still pending
# (its binding failed, its node went) is planned afresh.
HONOUR_SECONDS = 5.0


def _as_decided(objects: list[Obj], decided: dict[str, str], gone: set[str]) -> list[Obj]:
    """The objects with each pending pod of ``decided`` ("ns/name" -> node) bound to its node and
    each running pod of ``gone`` (the victims of that advice, being evicted) left out."""
    out = []
    for obj in objects:
        if obj.get("kind") != "Pod":
            out.append(obj)
            continue
        key = key_of(obj)
        node = decided.get(key) if pending(obj) else None
        if node is not None:
            out.append({**obj, "spec": {**obj.get("spec", {}), "nodeName": node}})
        elif key not in gone or pending(obj):
            out.append(obj)
    return out


class Advisor:
    def __init__(self, cache: WatchCache, solve: Solve, *, scheduler_name: str = "default-scheduler",
                 clock: Callable[[], float] = time.monotonic, heartbeat: Callable[[], None] = lambda: None) -> None:
        self.cache = cache
        self.heartbeat = heartbeat
        # advice handed out, by pod: (the pod's uid, its node, when); a pod of that name with another
        # uid (deleted and made again: a StatefulSet's, an Indexed Job's) is a new pod, not decided
        self._handed: dict[str, tuple[str, str, float]] = {}
        # victims of advice handed out: victim -> (its uid, it, when)
        self._victims: dict[str, tuple[str, Eviction, float]] = {}
        self.solve = solve
        self.scheduler_name = scheduler_name
        self.clock = clock
        self.current: Advised | None = None
        self.plans = 0  # plans made, for tests and metrics
        self._lock = threading.Lock()

    # ---- planning --------------------------------------------------------------------------
    def plan_once(self) -> Advised | None:
        """Plan what the cache holds now and make it the current advice: with no workload ready,
        a plan of nothing (status NOTHING_READY: current, but considering no workload). None
        when the solve failed; the advice before stays."""
        generation, objects = self.cache.snapshot()
        now = self.clock()
        with self._lock:
            uids = pod_uids(objects)
            self._handed = {p: (u, n, t) for p, (u, n, t) in self._handed.items()
                            if now - t <= HONOUR_SECONDS and uids.get(p) == u}
            self._victims = {p: (u, e, t) for p, (u, e, t) in self._victims.items()
                             if now - t <= HONOUR_SECONDS and uids.get(p, u) == u}
            decided = {p: n for p, (_, n, _) in self._handed.items()}
            gone = set(self._victims)
            still = [e for _, e, _ in self._victims.values()]
        real = select(objects, self.scheduler_name)
        sel = select(_as_decided(objects, decided, gone), self.scheduler_name) if decided else real
        if not sel.ready:  # a plan of nothing: the advisor is current, and considered no workload
            plan = NOTHING_READY
        else:
            try:
                plan = self.solve(sel.objects)
            except SolverError as exc:  # the advice before stays; the next change tries again
                LOG.warning(json.dumps({"event": "advise-solve-failed", "error": str(exc)}))
                return None
        honoured = [Binding(pod=p, node=n) for p, n in sorted(decided.items())]
        present = {key_of(o) for o in objects if o.get("kind") == "Pod"}  # a victim gone needs no evicting
        advised = Advised.of(plan, self.clock(), real.objects, generation, honoured,
                             [e for e in still if e.pod in present], number=self.plans + 1)
        with self._lock:
            self.current = advised
            self.plans += 1
        LOG.info(json.dumps({"event": "advised", "status": plan.status, "workloads": len(advised.bindings)}))
        return advised

    def run(self, stop: threading.Event, *, wait: float = 1.0) -> None:
        """Replan on every change the watch sees, until ``stop``."""
        self.cache.wait_synced()
        seen = -1
        while not stop.is_set():
            self.heartbeat()
            generation = self.cache.wait_change(seen, wait)
            if generation == seen:
                continue
            seen = generation
            self.plan_once()

    # ---- answering -------------------------------------------------------------------------
    def advise(self, kind: str, namespace: str, name: str, min_resource_version: str = "") -> pb.AdviseResponse:
        """What the current plan says of one workload, from memory: never a solve."""
        with self._lock:
            advised = self.current
        if advised is None:
            return pb.AdviseResponse(planned=False, reason="no plan yet")
        workload = advised.workload_of(kind, namespace, name)
        plan = advised.plan
        behind = self.cache.behind_since(advised.generation)
        out = pb.AdviseResponse(planned=False, status=plan.status, covered=workload in advised.versions,
                                plan=advised.number,
                                age_seconds=0.0 if behind is None else round(max(0.0, self.clock() - behind), 3),
                                resource_version=advised.versions.get(workload, ""))
        verdict = advised.verdicts.get(workload)
        bindings = advised.bindings.get(workload, [])
        named = f"{kind}/{namespace}/{name}"
        if kind in GROUP_KINDS and named != workload:  # a child group: its own pods of its tree's plan
            bindings = [b for b in bindings if named in advised.under.get(b.pod, ())]
        if workload not in advised.versions:
            out.reason = f"{workload} is not in the plan"
        elif not _newer_or_same(advised.versions[workload], min_resource_version):
            out.reason = (f"the plan was made from {workload} at resourceVersion {advised.versions[workload]}, "
                          f"before {min_resource_version}")
        elif verdict is not None and not verdict.satisfied:
            out.reason = verdict.reason or "not placed by the plan"
        elif not bindings:
            out.reason = "the plan binds none of its pods"
        else:
            out.planned = True
            out.bindings.extend(pb.Binding(pod=b.pod, node=b.node) for b in bindings)
            victims = [advised.victims[i] for i in advised.victims_for({b.node for b in bindings})]
            handed = self.clock()
            with self._lock:
                for b in bindings:
                    self._handed.setdefault(b.pod, (advised.uids.get(b.pod, ""), b.node, handed))
                for e in victims:
                    self._victims.setdefault(e.pod, (advised.uids.get(e.pod, ""), e, handed))
            out.evictions.extend(pb.Eviction(pod=e.pod, node=e.node, cost=e.cost, group=e.group)
                                 for e in victims)  # in the plan's order
        return out


class AdviseService(pb_grpc.PlacementServiceServicer):
    """``PlacementService`` with ``Advise`` only: ``Solve`` stays with ``gangplace serve``."""

    def __init__(self, advisor: Advisor) -> None:
        self.advisor = advisor

    def Advise(self, request: pb.AdviseRequest, context: grpc.ServicerContext) -> pb.AdviseResponse:
        if request.kind not in (*GROUP_KINDS, "Pod") or not request.name:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"kind: one of PodGroup, CompositePodGroup, Pod, with a name (got {request.kind!r}, "
                          f"{request.name!r})")
        return self.advisor.advise(request.kind, request.namespace, request.name, request.min_resource_version)


def serve(advisor: Advisor, config: ServerConfig | str = "127.0.0.1:0") -> tuple[grpc.Server, int]:
    """A gRPC server answering ``Advise`` from ``advisor`` on ``config.address`` (TLS when it names
    a certificate, mTLS with a client CA, a bearer token with a token file, as `gangplace serve`
    checks them), started; and its port."""
    from concurrent import futures

    if isinstance(config, str):
        config = ServerConfig(address=config)
    creds, unusable = tls(config, "--advise-")  # OSError: TLS options that do not go together
    checks: list[grpc.ServerInterceptor] = [TokenCheck(config.token_file)] if config.token_file else []
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), interceptors=checks)
    pb_grpc.add_PlacementServiceServicer_to_server(AdviseService(advisor), server)  # type: ignore[no-untyped-call]  # protoc's output is untyped
    if creds is None:
        try:
            port = server.add_insecure_port(config.address)
        except RuntimeError as exc:  # grpc's word for an address it cannot parse or bind
            raise ListenError("--advise", config.address, str(exc).split(";")[0]) from None
    else:  # as `gangplace serve` binds TLS: a free address grpc refused means unusable PEM
        port = listen(server, "--advise", config.address, creds, unusable)
    server.start()
    return server, port
