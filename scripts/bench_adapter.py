"""The adapter end to end on the API server double: last gang pod created -> last gang binding.

    PYTHONPATH=. python scripts/bench_adapter.py [--nodes 1000] [--repeat 3] [--pdbs loose|generated]
                                                 [--limit 10] [--seed 0]

Each repeat builds a fresh cluster in the double (tests/apiserver.py: real HTTP, the real
kubernetes client) from ``solver.bench.generate``: racks of 16 nodes (``--nodes 64`` is 4
racks) run low-priority background pods at 70 % of their cpu, so the pending 64-pod
rack-constrained gang of 8-cpu pods fits only with evictions. ``--pdbs loose`` drops the
generator's PodDisruptionBudgets; ``generated`` keeps those over two of its apps, 3
disruptions allowed each: the adapter plans with strict PDBs (the default policy), so none of its evictions is
refused.

The adapter (``adapter.main.Adapter``, solving in process) starts first; once it has synced
and leads, the gang's PodGroup and then its pods are created. Measured, from the double's
answered requests and the solve calls: ``total`` last pod created -> last gang binding;
``to_solve`` -> the solve starts; ``solve`` (all solves); ``evict`` solve end -> last
eviction answered (Preempted events included); ``victim_wait`` -> first binding answered
(the victims terminate); ``bind`` first -> last binding. One row per repeat, then the median.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapter.cluster import Cluster
from adapter.main import Adapter, in_process
from solver import reading
from solver.bench.generate import NS, GenerateSpec, generate
from solver.core.plan import Plan
from solver.kube.selection import select
from solver.verify import verify
from tests.apiserver import ApiServerDouble

Obj = dict[str, Any]
GANG = "train"
PDB_APPS, PDB_ALLOWED = ("web", "cache"), 3
COLUMNS = ("total", "to_solve", "solve", "evict", "victim_wait", "bind")


@dataclass
class Result:
    seconds: dict[str, float]
    gang: int  # pods in the gang
    bound: dict[str, str]  # gang pod -> node, as the double holds it at the end
    evicted: set[str]  # namespace/name of every eviction the double answered 201
    planned: set[str]  # every eviction of every plan the adapter carried out
    violations: list[str]  # what the verifier finds wrong with the adapter's plans (strict PDBs)
    plans: int
    replans: list[str] = field(default_factory=list)


def objects(nodes: int, pdbs: str, seed: int = 0) -> tuple[list[Obj], list[Obj]]:
    """(the running cluster, the gang: its PodGroup first, then its pods)."""
    if pdbs not in ("loose", "generated"):
        raise ValueError("pdbs is 'loose' or 'generated'")
    objs = generate(GenerateSpec(nodes=nodes, gang_gpus=0, seed=seed))
    gang = [o for o in objs if (o["kind"] == "PodGroup" and o["metadata"]["name"] == GANG) or
            (o["kind"] == "Pod" and o["spec"].get("schedulingGroup", {}).get("podGroupName") == GANG)]
    for o in gang:
        if o["kind"] == "Pod":
            o["spec"]["schedulerName"] = "gangplace"
    base = []
    for o in objs:
        if o in gang:
            continue
        if o["kind"] == "PodDisruptionBudget":
            # the generator's budgets (5 for each app) leave no placement under strict PDBs: keep
            # the ones over web and cache, 3 disruptions each, which the plan has to work around
            if pdbs == "loose" or o["metadata"]["name"] not in PDB_APPS:
                continue
            o["spec"]["maxUnavailable"] = o["status"]["disruptionsAllowed"] = PDB_ALLOWED
        base.append(o)
    return base, gang


def run_once(nodes: int, pdbs: str, limit: float = 10.0, seed: int = 0, timeout: float = 300.0) -> Result:
    base, gang = objects(nodes, pdbs, seed)
    pods = [o for o in gang if o["kind"] == "Pod"]
    solves: list[tuple[float, float, list[Obj], Plan]] = []
    solve_in_process = in_process(limit)

    def solve(objs: list[Obj]) -> Plan:
        start = time.monotonic()
        plan = solve_in_process(objs)
        solves.append((start, time.monotonic(), objs, plan))
        return plan

    api = ApiServerDouble()
    for o in base:
        api.put(o)
    api.start()
    adapter = Adapter(Cluster.at(api.url), solve, identity="bench")
    stop = threading.Event()
    thread = threading.Thread(target=adapter.run, args=(stop,), daemon=True, name="adapter")
    try:
        thread.start()
        if not api.wait_until(lambda: adapter.elector.leading and adapter.cache.wait_synced(0.1), timeout=120):
            raise RuntimeError("the adapter did not sync and lead")
        for o in gang:
            api.put(o)
        created = time.monotonic()
        binding = f"/namespaces/{NS}/pods/{GANG}-"

        def gang_bindings() -> list[Any]:
            return [r for r in api.requests if r.verb == "create" and r.code == 201 and r.path.startswith(
                f"/api/v1{binding}") and r.path.endswith("/binding")]

        def done() -> bool:
            if any(not w.satisfied for _, _, _, plan in solves for w in plan.workloads):
                raise RuntimeError(f"the gang does not fit: {[w.reason for w in solves[-1][3].workloads]}")
            return len(gang_bindings()) >= len(pods)

        if not api.wait_until(done, timeout=timeout, interval=0.05):
            replans = [o.replan for o in adapter.outcomes]
            raise RuntimeError(f"the gang was not bound within {timeout:g} s "
                               f"({len(gang_bindings())} of {len(pods)}; replans {replans})")
        bindings = gang_bindings()
        evictions = [r for r in api.requests if r.path.endswith("/eviction") and r.code == 201]
        bound = {p["metadata"]["name"]: (api.get("pods", NS, p["metadata"]["name"]) or {}).get("spec", {}).get(
            "nodeName", "") for p in pods}
    finally:
        stop.set()
        thread.join(30)
        adapter.cluster.close()
        api.stop()
    violations = []
    for _, _, objs, plan in solves:
        snapshot = reading.read(select(objs, "gangplace").objects)
        violations += [str(v) for v in verify(snapshot.facts, snapshot, plan, strict_pdbs=True)]
    solve_end = solves[-1][1]
    last_evicted = max((r.at for r in evictions), default=solve_end)
    seconds = {
        "total": bindings[-1].at - created,
        "to_solve": solves[0][0] - created,
        "solve": sum(end - start for start, end, _, _ in solves),
        "evict": last_evicted - solve_end if evictions else 0.0,
        "victim_wait": bindings[0].at - last_evicted,
        "bind": bindings[-1].at - bindings[0].at,
    }
    return Result(seconds=seconds, gang=len(pods), bound=bound,
                  evicted={"/".join(r.path.split("/")[4:7:2]) for r in evictions},
                  planned={e.pod for _, _, _, plan in solves for e in plan.evictions},
                  violations=violations, plans=len(solves), replans=[o.replan for o in adapter.outcomes if o.replan])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--pdbs", choices=("loose", "generated"), default="loose")
    p.add_argument("--limit", type=float, default=10.0, metavar="S", help="the solver's time limit")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    header = f"{'repeat':>6} {'nodes':>5} {'pdbs':>9} {'plans':>5} {'evicted':>7} " + \
        " ".join(f"{c:>11}" for c in COLUMNS)
    print(header)
    rows = []
    for k in range(args.repeat):
        r = run_once(args.nodes, args.pdbs, args.limit, args.seed)
        rows.append(r.seconds)
        print(f"{k + 1:>6} {args.nodes:>5} {args.pdbs:>9} {r.plans:>5} {len(r.evicted):>7} "
              + " ".join(f"{r.seconds[c]:>11.3f}" for c in COLUMNS), flush=True)
        if r.violations or r.evicted != r.planned or r.replans:
            print(f"       violations {r.violations} unplanned evictions {sorted(r.evicted - r.planned)} "
                  f"replans {r.replans}", flush=True)
    print(f"{'median':>6} {args.nodes:>5} {args.pdbs:>9} {'':>5} {'':>7} "
          + " ".join(f"{statistics.median(x[c] for x in rows):>11.3f}" for c in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
