"""``gangplace adapter``: a secondary scheduler for pods with ``schedulerName: gangplace``.

    gangplace adapter (--kubeconfig PATH | --in-cluster | --api-server URL)
                      (--solver HOST:PORT | --in-process) [--scheduler-name NAME] [--dry-run]

The subcommand is contributed to the ``gangplace`` command through the
``gangplace.commands`` entry point, so ``solver`` never imports ``adapter``. Its arguments live
in :mod:`adapter.command` (the entry point), importable without the Kubernetes client;
``register`` is kept here for installs whose entry point still names ``adapter.main:register``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from adapter.cache import WatchCache
from adapter.cluster import Cluster
from adapter.command import register as register
from adapter.controller import Executor, Outcome, gone
from adapter.leader import LeaderElector
from adapter.observe import AdapterMetrics, Endpoint, Heartbeat
from solver import api, reading
from solver.core.errors import BugError, InputError, SolverError
from solver.core.plan import Plan
from solver.core.snapshot import ExpectedPod, GroupKey, qualified
from solver.kube import loader
from solver.kube.selection import Selection, groups_of, select, tree_of
from solver.kube.selection import key as pod_key
from solver.kube.selection import pending as _pending
from solver.problem.build import DEFAULT_PDB_POLICY, PdbPolicy
from solver.service import telemetry
from solver.service.server import ServerConfig

LOG = logging.getLogger("gangplace.adapter")
Obj = dict[str, Any]
Solve = Callable[[list[Obj]], Plan]


# One PDB policy for planning and carrying out. "strict" (the default) plans with PDBs as a hard
# rule and evicts through the Eviction API, which refuses (429) exactly the evictions such a plan
# never makes. "soft" plans a violation as the third tier and deletes victims as kube-scheduler's
# preemption does. (A soft plan carried out through the Eviction API would, whenever only a
# violation places the gang, be refused on every attempt: victims evicted for nothing, then the
# same plan again. So the Executor follows the policy the plan was made under.)


def _seconds_since(stamp: object) -> float | None:
    """Seconds since an RFC 3339 timestamp (None when absent or unreadable)."""
    if not isinstance(stamp, str):
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (datetime.now(UTC) - then).total_seconds())


def in_process(time_limit: float = 10.0, pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY,
               expected: tuple[ExpectedPod, ...] = ()) -> Solve:
    options = api.PlanOptions(time_limit=time_limit, pdb_policy=pdb_policy, expected=expected)

    def solve(objects: list[Obj]) -> Plan:
        return api.plan(reading.read(objects), options)
    return solve


def remote(target: str, time_limit: float = 10.0, *, tls_ca: str | None = None, tls_cert: str | None = None,
           tls_key: str | None = None, token_file: str | None = None,
           pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY, expected: tuple[ExpectedPod, ...] = ()) -> Solve:
    from solver.service import client

    token = None
    if token_file:
        with open(token_file, encoding="utf-8") as fh:
            token = fh.read().strip()
    conn = client.PlacementClient(target, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, token=token)
    options = api.PlanOptions(time_limit=time_limit, pdb_policy=pdb_policy, expected=expected)

    def solve(objects: list[Obj]) -> Plan:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).encode()
        return conn.solve(body, options)
    return solve


class Adapter:
    def __init__(self, cluster: Cluster, solve: Solve, *, scheduler_name: str = "gangplace",
                 identity: str | None = None, lease_namespace: str = "kube-system",
                 lease_name: str = "gangplace-adapter", renew: float = 2.0, lease_duration: int = 15,
                 executor: Executor | None = None, cache: WatchCache | None = None,
                 backoff: tuple[float, float] = (0.05, 5.0), pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY,
                 metrics: AdapterMetrics | None = None, stale_after: float = 120.0) -> None:
        self.cluster = cluster
        self.solve = solve
        self.scheduler_name = scheduler_name
        self.cache = cache or WatchCache(cluster)
        self.executor = executor or Executor(cluster, pdb_policy=pdb_policy)
        self.elector = LeaderElector(cluster, namespace=lease_namespace, name=lease_name,
                                     identity=identity or f"{socket.gethostname()}-{os.getpid()}",
                                     lease_duration=lease_duration)
        self.renew = renew
        self.backoff = backoff  # between plans abandoned midway, doubling (a race that does not end at once)
        self.outcomes: deque[Outcome] = deque(maxlen=HISTORY)  # the latest, for tests and debugging
        self._electing = False  # run() keeps the lease: reconcile acts only while it holds it
        self.lease_problem = ""  # why the last attempt on the lease failed ("" when it did not)
        self._waiting: dict[str, str] = {}  # workloads not attempted yet, as last logged
        self._logged: dict[str, str] | None = None  # the pending workloads the last "executed" line named
        self.executor.leading = lambda: not self._electing or self.elector.leading
        self.executor.lookup = lambda key: self.cache.get("Pod", key)
        self.plans: deque[Plan] = deque(maxlen=HISTORY)
        self.isolated: dict[str, str] = {}  # "Kind/ns/name" -> why, for the last plan (bad objects left out)
        self.metrics = metrics or AdapterMetrics()
        # liveness: the loop beats at least every renew period, and around each plan it makes;
        # stale_after must exceed the longest plan and its execution (time limit + evictions)
        self.heartbeat = Heartbeat(stale_after)
        # read from the watch when scraped, so that they move while nothing changes and count pods
        # no plan has attempted yet (a PodGroup not created, a gang short of its minCount)
        self.metrics.pending_pods.set_function(lambda: len(self._pending_ages()))
        self.metrics.oldest_pending.set_function(lambda: max(self._pending_ages(), default=0.0))

    def plan_once(self) -> Plan | None:
        """The plan for what the cache holds now; None when no workload is ready."""
        sel = select(self.cache.objects(), self.scheduler_name)
        if not sel.ready:
            return None
        return self.solve(sel.objects)

    def reconcile(self) -> Outcome | None:
        begun = time.perf_counter()
        objects = self.cache.objects()
        self.executor.record_settled(objects, self.scheduler_name)
        sel = select(objects, self.scheduler_name)
        self._record_waiting(sel, objects)
        if not sel.ready:
            return None
        solvable = sel.objects
        self.isolated = {}
        for _ in range(MAX_ISOLATED):
            started = time.perf_counter()
            try:
                plan = self.solve(solvable)
                self.metrics.plan_seconds.observe(time.perf_counter() - started)
                self.metrics.plans.labels(plan.status).inc()
                break
            except BugError as exc:  # the same input gives the same bug: wait for the cluster to change
                self.metrics.bugs.inc()
                LOG.error(json.dumps({"event": "solver-bug", "error": str(exc)}))
                return None
            except SolverError as exc:
                bad = _bad_object(exc)
                if bad is None or bad in self.isolated:
                    # the solver is down or busy (or the error names nothing to leave out): try again
                    self.metrics.solve_failures.inc()
                    LOG.warning(json.dumps({"event": "solve-failed", "error": str(exc)}))
                    return Outcome(replan=f"solve failed: {exc}")
                solvable = self._isolate(solvable, bad, str(exc))
        else:
            return Outcome(replan="too many bad objects")
        if not select(solvable, self.scheduler_name).ready:
            return None
        self.plans.append(plan)
        if self._electing and not self.elector.leading:
            LOG.warning(json.dumps({"event": "lease-lost-before-execution"}))
            return None  # another replica may be acting now: carry nothing out
        try:
            outcome = self.executor.execute(plan, sel.objects)
        except Exception as exc:  # the API server failed past the retries: roll forward next time
            LOG.warning(json.dumps({"event": "execute-failed", "error": f"{type(exc).__name__}: {exc}"}))
            outcome = Outcome(replan=f"API error: {exc}")
        self.outcomes.append(outcome)
        self.metrics.evictions.inc(len(outcome.evicted))
        self.metrics.bindings.inc(len(outcome.bound))
        self._record_pending(plan, outcome, begun)
        self.heartbeat.beat()
        self._log_executed(plan, outcome)
        self._wait_seen(outcome)
        return outcome

    def _log_executed(self, plan: Plan, outcome: Outcome) -> None:
        """One line per plan carried out, naming what it did and what it left pending and why (at
        most LOGGED of each); a plan that did nothing and left the same workloads pending for the
        same reasons as the last is logged at debug level (the watch sees each change 2 or 3 times)."""
        pending = {qualified(w.kind, w.name): w.reason or "not placed" for w in plan.workloads if not w.satisfied}
        line = {"event": "executed", "status": plan.status, "evicted": len(outcome.evicted),
                "bound": len(outcome.bound), "replan": outcome.replan,
                "placed": sorted(qualified(w.kind, w.name) for w in plan.workloads if w.satisfied)[:LOGGED],
                "pending": dict(sorted(pending.items())[:LOGGED])}
        idle = not (outcome.evicted or outcome.bound or outcome.replan)
        LOG.log(logging.DEBUG if idle and pending == self._logged else logging.INFO, json.dumps(line))
        self._logged = pending

    def _record_waiting(self, sel: Selection, objects: list[Obj]) -> None:
        """Pods not attempted yet say why (condition, Event), and a line says so once per change."""
        if sel.held:
            pods = {pod_key(o): o for o in objects if o["kind"] == "Pod"}
            try:
                self.executor.record_waiting(sel.held, pods)
            except Exception as exc:  # best effort: the next change writes it again
                LOG.info(json.dumps({"event": "waiting-record-failed", "error": f"{type(exc).__name__}: {exc}"}))
        if sel.waiting != self._waiting:
            for workload, why in sorted(sel.waiting.items()):
                if self._waiting.get(workload) != why:
                    LOG.info(json.dumps({"event": "waiting", "workload": workload, "reason": why}))
            self._waiting = dict(sel.waiting)

    def _record_pending(self, plan: Plan, outcome: Outcome, begun: float) -> None:
        """The scheduler-style series: attempts per workload, what is left pending and for how long."""
        m = self.metrics
        m.e2e_seconds.observe(time.perf_counter() - begun)
        for w in plan.workloads:
            m.attempts.labels("error" if outcome.replan else "scheduled" if w.satisfied else "unschedulable").inc()
        m.pending_workloads.set(sum(1 for w in plan.workloads if not w.satisfied))

    def _pending_ages(self) -> list[float]:
        """The age of each pod of this scheduler the watch shows pending (0 when its creation
        time is unreadable)."""
        return [_seconds_since(o.get("metadata", {}).get("creationTimestamp")) or 0.0
                for o in self.cache.of_kind("Pod")
                if _pending(o) and o.get("spec", {}).get("schedulerName") == self.scheduler_name]

    def _isolate(self, objects: list[Obj], bad: str, why: str) -> list[Obj]:
        """The objects without ``bad`` and what it touches: a pod of a pending workload takes the
        workload's pending pods along (they get a condition and an Event naming the object); a
        running pod takes its node along (its room cannot be counted); a node, its pods.
        Everything else is still planned."""
        self.isolated[bad] = why
        LOG.warning(json.dumps({"event": "object-isolated", "object": bad, "error": why}))
        kind, _, rest = bad.partition("/")
        target = next((o for o in objects if o.get("kind") == kind and _ident(o) == bad), None)
        drop = {bad}
        if target is not None and kind == "Pod":
            spec = _dict(target.get("spec"))
            group = _dict(spec.get("schedulingGroup")).get("podGroupName")
            if spec.get("nodeName"):
                drop.add(f"Node/{spec['nodeName']}")
            elif group:
                ns = rest.split("/")[0]
                tree = _tree(objects, f"{ns}/{group}")
                for o in objects:
                    s = _dict(o.get("spec"))
                    g = _dict(s.get("schedulingGroup")).get("podGroupName")
                    if o.get("kind") == "Pod" and not s.get("nodeName") and g and f"{ns}/{g}" in tree:
                        drop.add(_ident(o))
                self.executor.isolated(objects, tree, bad, why)
        if kind == "Node":
            drop |= {_ident(o) for o in objects if o.get("kind") == "Pod" and isinstance(o.get("spec"), dict)
                     and o["spec"].get("nodeName") == rest}
        if target is not None:
            self.executor.event(rest.split("/")[0] if rest.count("/") else "default", target, "FailedScheduling",
                                 f"gangplace left {bad} out: {why}", "Warning", "Scheduling")
        return [o for o in objects if _ident(o) not in drop]

    def _wait_seen(self, outcome: Outcome, timeout: float = 10.0) -> None:
        """Let the cache catch up with what was just written, so the next plan is not stale (an
        evicted pod is gone once absent or replaced by another of its name, another uid; a
        condition written is shown, else the next reconcile would write it again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            bound = all((p := self.cache.get("Pod", k)) is None or p.get("spec", {}).get("nodeName")
                        for k in outcome.bound)
            left = any(not gone(self.cache.get("Pod", k), outcome.evicted_uids.get(k)) for k in outcome.evicted)
            shown = all(_shows(self.cache.get(kind, k), *cond) for kind, k, *cond in outcome.conditions)
            if bound and not left and shown:
                return
            time.sleep(0.02)

    def _keep_lease(self, stop: threading.Event) -> None:
        """Acquire, then renew every ``renew`` seconds, on its own thread: a long solve or a slow
        victim does not let the lease lapse mid-plan (a standby would take over and act too)."""
        while not stop.is_set():
            was = self.elector.leading
            problem = ""
            try:
                leading = self.elector.try_acquire_or_renew()
            except Exception as exc:  # the API server did not answer (or refused): not leading until it does
                problem = (f"Lease {self.elector.namespace}/{self.elector.name} "
                           f"(--lease-namespace, --lease-name): {exc}")
                self.elector.leading = leading = False
            if problem != self.lease_problem:  # a line when it starts, changes or ends, not every renew
                if problem:
                    LOG.warning(json.dumps({"event": "lease-error", "error": problem}))
                else:
                    LOG.info(json.dumps({"event": "lease-ok"}))
                self.lease_problem = problem
            if was and not leading:
                LOG.warning(json.dumps({"event": "lease-lost", "identity": self.elector.identity}))
            elif leading and not was:
                LOG.info(json.dumps({"event": "leading", "identity": self.elector.identity,
                                     "lease": f"{self.elector.namespace}/{self.elector.name}"}))
            self.metrics.leader.set(1 if leading else 0)
            stop.wait(self.renew)

    def run(self, stop: threading.Event) -> None:
        self.cache.start()
        while not stop.is_set() and not self.cache.wait_synced(1.0):  # never plan on a partial view
            self.heartbeat.beat()
            LOG.warning(json.dumps({"event": "cache-not-synced"}))
        seen = -1
        retry = False  # the last plan was abandoned midway: plan again even if nothing changed
        delay = self.backoff[0]
        done = threading.Event()  # ends the lease thread only after the loop, so release comes last
        keeper = threading.Thread(target=self._keep_lease, args=(done,), name="gangplace-lease", daemon=True)
        keeper.start()
        self._electing = True
        try:
            while not stop.is_set():
                self.heartbeat.beat()
                if not self.elector.leading:
                    stop.wait(min(self.renew, 0.1))
                    continue
                now = self.cache.wait_change(seen, timeout=min(self.renew, 1.0))
                if (now != seen or retry) and self.elector.leading:
                    seen = now
                    try:
                        outcome = self.reconcile()
                    except Exception as exc:  # never let one reconcile end the loop
                        LOG.error(json.dumps({"event": "reconcile-failed", "error": f"{type(exc).__name__}: {exc}"}))
                        outcome = Outcome(replan=f"reconcile failed: {exc}")
                    retry = outcome is not None and bool(outcome.replan)
                    if retry:
                        stop.wait(delay)
                        delay = min(delay * 2, self.backoff[1])
                    else:
                        delay = self.backoff[0]
        finally:
            self._electing = False
            done.set()
            keeper.join()
            self.elector.release()
            self.metrics.leader.set(0)
            self.cache.stop()
            LOG.info(json.dumps({"event": "stopped", "identity": self.elector.identity}))


HISTORY = 100  # plans and outcomes kept
LOGGED = 10  # workloads named in one "executed" line, of each kind
MAX_ISOLATED = 20  # bad objects left out of one plan before giving up on it


def _bad_object(exc: SolverError) -> str | None:
    """The "Kind/ns/name" a bad input names (in process: the error's own; from the solver
    service: its google.rpc details, ``solver.service.status``); None for anything else."""
    obj = exc.obj if isinstance(exc, InputError) else ""
    return obj if "/" in obj and not obj.startswith("?") else None


def _shows(obj: Obj | None, type_: str, status: str, message: str) -> bool:
    """``obj`` carries the condition as written, or is gone (nothing left to wait for)."""
    return obj is None or any((c.get("type"), c.get("status"), c.get("message")) == (type_, status, message)
                              for c in _dict(obj.get("status")).get("conditions") or [])


def _dict(value: object) -> Obj:
    """``value`` when it is a mapping as JSON has them, else empty (a malformed object's field)."""
    return value if isinstance(value, dict) else {}


def _ident(obj: Obj) -> str:
    meta = _dict(obj.get("metadata"))
    ns = meta.get("namespace")
    return f"{obj.get('kind')}/{ns}/{meta.get('name')}" if ns else f"{obj.get('kind')}/{meta.get('name')}"


def _tree(objects: list[Obj], leaf: str) -> set[str]:
    """Every group key of the tree ``leaf`` belongs to (root and all its descendants)."""
    tree = tree_of(groups_of(objects))
    return set(tree.subtree(tree.root(GroupKey(leaf)))) if leaf in tree else {leaf}


# ---- the subcommand (its arguments: adapter.command) ---------------------------------------


def main(args: argparse.Namespace) -> int:
    telemetry.log_json_to_stderr()  # the same JSON lines as `gangplace serve`
    if args.api_server:
        cluster = Cluster.at(args.api_server)
    else:
        cluster = Cluster.connect(args.kubeconfig, args.in_cluster)
    expected = loader.load_expected_pods(args.expected_pods)
    solve = in_process(args.time_limit, args.pdb_policy, expected) if args.in_process else remote(
        args.solver, args.time_limit, tls_ca=args.solver_ca, tls_cert=args.solver_cert, tls_key=args.solver_key,
        token_file=args.solver_token_file, pdb_policy=args.pdb_policy, expected=expected)
    adapter = Adapter(cluster, solve, scheduler_name=args.scheduler_name, lease_namespace=args.lease_namespace,
                      pdb_policy=args.pdb_policy, stale_after=stale_after(args.time_limit))
    if args.dry_run:
        return dry_run(adapter)
    stop = threading.Event()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    endpoint = serve_probes(adapter, args.metrics_host, args.metrics_port) if args.metrics_port else None
    try:
        if args.advise:
            return advise(adapter, ServerConfig(
                address=args.advise, tls_cert=args.advise_tls_cert, tls_key=args.advise_tls_key,
                tls_client_ca=args.advise_tls_client_ca, token_file=args.advise_token_file), stop)
        adapter.run(stop)
    finally:
        if endpoint is not None:
            endpoint.stop()
    return 0


def advise(adapter: Adapter, config: ServerConfig, stop: threading.Event) -> int:
    """``--advise``: the watch, a plan per change, and the Advise RPC on ``config.address`` (with
    its TLS and token settings) until ``stop``."""
    from adapter.advise import Advisor, serve
    from solver.service.server import ListenError

    address = config.address
    advisor = Advisor(adapter.cache, adapter.solve, scheduler_name=adapter.scheduler_name,
                      heartbeat=adapter.heartbeat.beat)  # /healthz: the replan loop was seen lately
    try:
        server, port = serve(advisor, config)  # first: a bad address is said before any watch starts
    except ListenError as exc:  # as `gangplace serve` says it: the flag, the address, why
        print(f"gangplace: --advise {address}: {exc.reason}", file=sys.stderr)
        return 2
    adapter.cache.start()
    # Advise answers within the plugin's deadline (50 ms) while this process replans in Python:
    # a thread waiting for the GIL gets it within the switch interval, and an answer passes it
    # a few times (grpc's poller, a worker, the reply); 1 ms instead of 5 keeps that well inside
    sys.setswitchinterval(0.001)
    LOG.info(json.dumps({"event": "advising", "address": address, "port": port}))
    try:
        advisor.run(stop)
    finally:
        server.stop(1).wait()
        adapter.cache.stop(join=5.0)
    return 0


def stale_after(time_limit: float) -> float:
    """Liveness: a loop unseen for longer than a plan and its evictions could take is stuck."""
    return max(120.0, 4 * time_limit + 60)


def serve_probes(adapter: Adapter, host: str, port: int) -> Endpoint:
    return Endpoint(adapter.metrics, adapter.heartbeat.alive, lambda: unready(adapter), host, port)


def unready(adapter: Adapter) -> str:
    """Why the adapter is not ready ("" when it is): its watch cache has not listed every kind
    yet, or it cannot read or write its Lease (a standby that can reach the Lease is ready)."""
    if not adapter.cache.synced:
        return "the watch cache has not listed every kind yet"
    return adapter.lease_problem


def dry_run(adapter: Adapter, out: Any = None) -> int:
    """Read the cluster once, print the plan it would carry out, write nothing (no lease)."""
    adapter.cache.start()
    try:
        if not adapter.cache.wait_synced():
            print("gangplace: the cluster did not answer in time", file=sys.stderr)
            return 1
        plan = adapter.plan_once()
    finally:
        adapter.cache.stop()
    print(json.dumps(plan.to_dict() if plan else {"status": "NOTHING_READY"}, indent=2), file=out or sys.stdout)
    return 0
