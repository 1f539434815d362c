"""``gangplace adapter``: a secondary scheduler for pods with ``schedulerName: gangplace``.

    gangplace adapter (--kubeconfig PATH | --in-cluster | --api-server URL)
                      (--solver HOST:PORT | --in-process) [--scheduler-name NAME] [--dry-run]

The subcommand is contributed to the ``gangplace`` command through the
``gangplace.commands`` entry point, so ``solver`` never imports ``adapter``.
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
from collections.abc import Callable
from typing import Any

from adapter.cache import WatchCache
from adapter.cluster import Cluster
from adapter.controller import Executor, Outcome, gone, select
from adapter.leader import LeaderElector
from solver import api, kube
from solver.model.errors import SolverError
from solver.model.plan import Plan

LOG = logging.getLogger("gangplace.adapter")
Obj = dict[str, Any]
Solve = Callable[[list[Obj]], Plan]


# The adapter evicts through the Eviction API, which refuses (429) any eviction beyond a PDB's
# disruptionsAllowed: it plans with PDBs as a hard rule, so a plan it makes is one it can carry out.
# (Planning with the soft PDB tier would yield, whenever only a violation places the gang, a plan
# refused on every attempt: victims evicted for nothing, then the same plan again.)


def in_process(time_limit: float = 10.0) -> Solve:
    def solve(objects: list[Obj]) -> Plan:
        return api.plan(kube.snapshot_from_objects(objects), api.PlanOptions(time_limit=time_limit, strict_pdbs=True))
    return solve


def remote(target: str, time_limit: float = 10.0) -> Solve:
    from solver import client

    conn = client.PlacementClient(target)

    def solve(objects: list[Obj]) -> Plan:
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).encode()
        return conn.solve(body, client.SolveOptions(time_limit=time_limit, strict_pdbs=True))
    return solve


class Adapter:
    def __init__(self, cluster: Cluster, solve: Solve, *, scheduler_name: str = "gangplace",
                 identity: str | None = None, lease_namespace: str = "kube-system",
                 lease_name: str = "gangplace-adapter", renew: float = 2.0, lease_duration: int = 15,
                 executor: Executor | None = None, cache: WatchCache | None = None,
                 backoff: tuple[float, float] = (0.05, 5.0)) -> None:
        self.cluster = cluster
        self.solve = solve
        self.scheduler_name = scheduler_name
        self.cache = cache or WatchCache(cluster)
        self.executor = executor or Executor(cluster)
        self.elector = LeaderElector(cluster, namespace=lease_namespace, name=lease_name,
                                     identity=identity or f"{socket.gethostname()}-{os.getpid()}",
                                     lease_duration=lease_duration)
        self.renew = renew
        self.backoff = backoff  # between plans abandoned midway, doubling (a race that does not end at once)
        self.outcomes: list[Outcome] = []
        self._electing = False  # run() keeps the lease: reconcile acts only while it holds it
        self.executor.leading = lambda: not self._electing or self.elector.leading
        self.executor.lookup = lambda key: self.cache.get("Pod", key)
        self.plans: list[Plan] = []

    def plan_once(self) -> Plan | None:
        """The plan for what the cache holds now; None when no workload is ready."""
        sel = select(self.cache.objects(), self.scheduler_name)
        if not sel.ready:
            return None
        return self.solve(sel.objects)

    def reconcile(self) -> Outcome | None:
        objects = self.cache.objects()
        self.executor.record_settled(objects, self.scheduler_name)
        sel = select(objects, self.scheduler_name)
        if not sel.ready:
            return None
        try:
            plan = self.solve(sel.objects)
        except SolverError as exc:
            LOG.warning(json.dumps({"event": "solve-failed", "error": str(exc)}))
            return None
        self.plans.append(plan)
        if self._electing and not self.elector.leading:
            LOG.warning(json.dumps({"event": "lease-lost-before-execution"}))
            return None  # another replica may be acting now: carry nothing out
        outcome = self.executor.execute(plan, sel.objects)
        self.outcomes.append(outcome)
        LOG.info(json.dumps({"event": "executed", "status": plan.status, "evicted": len(outcome.evicted),
                             "bound": len(outcome.bound), "replan": outcome.replan}))
        self._wait_seen(outcome)
        return outcome

    def _wait_seen(self, outcome: Outcome, timeout: float = 10.0) -> None:
        """Let the cache catch up with what was just written, so the next plan is not stale (an
        evicted pod is gone once absent or replaced by another of its name, another uid)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            bound = all((p := self.cache.get("Pod", k)) is None or p.get("spec", {}).get("nodeName")
                        for k in outcome.bound)
            left = any(not gone(self.cache.get("Pod", k), outcome.evicted_uids.get(k)) for k in outcome.evicted)
            if bound and not left:
                return
            time.sleep(0.02)

    def _keep_lease(self, stop: threading.Event) -> None:
        """Acquire, then renew every ``renew`` seconds, on its own thread: a long solve or a slow
        victim does not let the lease lapse mid-plan (a standby would take over and act too)."""
        while not stop.is_set():
            was = self.elector.leading
            try:
                leading = self.elector.try_acquire_or_renew()
            except Exception as exc:  # the API server did not answer: not leading until it does
                LOG.warning(json.dumps({"event": "lease-error", "error": str(exc)}))
                self.elector.leading = leading = False
            if was and not leading:
                LOG.warning(json.dumps({"event": "lease-lost"}))
            stop.wait(self.renew)

    def run(self, stop: threading.Event) -> None:
        self.cache.start()
        self.cache.wait_synced()
        seen = -1
        retry = False  # the last plan was abandoned midway: plan again even if nothing changed
        delay = self.backoff[0]
        done = threading.Event()  # ends the lease thread only after the loop, so release comes last
        keeper = threading.Thread(target=self._keep_lease, args=(done,), name="gangplace-lease", daemon=True)
        keeper.start()
        self._electing = True
        try:
            while not stop.is_set():
                if not self.elector.leading:
                    stop.wait(min(self.renew, 0.1))
                    continue
                now = self.cache.wait_change(seen, timeout=min(self.renew, 1.0))
                if (now != seen or retry) and self.elector.leading:
                    seen = now
                    outcome = self.reconcile()
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
            self.cache.stop()


# ---- the subcommand --------------------------------------------------------------------------


def register(sub: Any) -> None:
    p = sub.add_parser("adapter", help="schedule pods of schedulerName gangplace on a cluster")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--kubeconfig", metavar="PATH")
    where.add_argument("--in-cluster", action="store_true")
    where.add_argument("--api-server", metavar="URL", help="an API server without auth (tests, kubectl proxy)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--solver", metavar="HOST:PORT", help="a running `gangplace serve`")
    how.add_argument("--in-process", action="store_true", help="solve in this process")
    p.add_argument("--scheduler-name", default="gangplace")
    p.add_argument("--time-limit", type=float, default=10.0, metavar="S")
    p.add_argument("--lease-namespace", default="kube-system")
    p.add_argument("--dry-run", action="store_true", help="print the plan it would carry out, write nothing")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    handler = logging.StreamHandler(sys.stderr)
    logging.getLogger("gangplace").addHandler(handler)
    logging.getLogger("gangplace").setLevel(logging.INFO)
    if args.api_server:
        cluster = Cluster.at(args.api_server)
    else:
        cluster = Cluster.connect(args.kubeconfig, args.in_cluster)
    solve = in_process(args.time_limit) if args.in_process else remote(args.solver, args.time_limit)
    adapter = Adapter(cluster, solve, scheduler_name=args.scheduler_name, lease_namespace=args.lease_namespace)
    if args.dry_run:
        return dry_run(adapter)
    stop = threading.Event()
    import signal

    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    adapter.run(stop)
    return 0


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
