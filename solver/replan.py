"""``gangplace replan``: what a joint plan of every pending workload would do to a snapshot.

Per snapshot: which workloads would be admitted, the evictions, cost and bound, and the
cluster's free-GPU fragmentation before and after the plan. GPUs are every extended
resource whose name ends in ``gpu`` (``nvidia.com/gpu``, ``example.com/gpu``...) plus
node-local DRA devices. Per rack (``topology.kubernetes.io/rack``; "-" without one):
``freeGpus`` free devices, ``wholeNodes`` nodes with every GPU free (the unit a large gang
needs), ``fragmentedGpus`` free GPUs stranded on partly used nodes.

Sharding for an Indexed Job: the snapshots, sorted by path, go to shard ``i % n``; so N
pods given ``--shard I/N`` for I in 0..N-1 cover every snapshot exactly once.

Pure: ``report`` takes a snapshot and its plan; the CLI reads and writes the files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, TypeVar

from solver.core import snapshot as s
from solver.core.errors import Kind, SolverError
from solver.core.plan import Plan

RACK = "topology.kubernetes.io/rack"
T = TypeVar("T")


class ShardError(SolverError):
    kind = Kind.INPUT  # a --shard that names no shard


def parse_shard(text: str) -> tuple[int, int]:
    """"I/N" -> (I, N), 0 <= I < N."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError as exc:
        raise ShardError(f"--shard {text!r}: expected I/N, e.g. 0/4") from exc
    if n < 1 or not 0 <= i < n:
        raise ShardError(f"--shard {text!r}: need 0 <= I < N")
    return i, n


def shard(items: Sequence[T], index: int, count: int) -> list[T]:
    return [x for k, x in enumerate(items) if k % count == index]


def _gpu_resources(node: s.Node) -> list[str]:
    return [r for r in node.allocatable if r.lower().endswith("gpu")]


def fragmentation(snapshot: s.ClusterSnapshot, plan: Plan | None) -> dict[str, dict[str, int]]:
    """Per rack: freeGpus, wholeNodes, fragmentedGpus — now (plan None) or after ``plan``."""
    evicted = {e.pod for e in plan.evictions} if plan else set()
    placed = {b.pod: b.node for b in plan.bindings} if plan else {}
    used: dict[str, int] = defaultdict(int)
    pods = {p.key: p for p in snapshot.pods}
    for p in snapshot.pods:
        on = p.node if p.node is not None and p.key not in evicted else placed.get(p.key)
        if on is None:
            continue
        for res, amount in p.requests.items():
            if res.lower().endswith("gpu"):
                used[on] += amount
    # DRA: node-local devices held by claims that stay, and the plan's allocations
    dra = snapshot.dra
    total_dev: dict[str, int] = defaultdict(int)
    for d in dra.devices:
        if d.node is not None:
            total_dev[d.node] += 1
    node_of_device = {d.key: d.node for d in dra.devices if d.node is not None}
    held: set[str] = set()
    for claim in dra.claims.values():
        if claim.allocation is None:
            continue
        users = [u for u in claim.reserved_pods if u in pods]
        if users and all(u in evicted for u in users):
            continue
        held.update(a.device for a in claim.allocation)
    if plan:
        for alloc in plan.device_allocations:
            held.update(f"{x.driver}/{x.pool}/{x.device}" for x in alloc.devices)
    for key in held:
        if (n := node_of_device.get(s.DeviceKey(key))) is not None:
            used[n] += 1
    out: dict[str, dict[str, int]] = {}
    for node in snapshot.nodes:
        total = sum(node.allocatable[r] for r in _gpu_resources(node)) + total_dev.get(node.name, 0)
        if total == 0:
            continue
        free = max(0, total - used.get(node.name, 0))
        rack = out.setdefault(node.labels.get(RACK, "-"), {"freeGpus": 0, "wholeNodes": 0, "fragmentedGpus": 0})
        rack["freeGpus"] += free
        if free == total:
            rack["wholeNodes"] += 1
        elif free:
            rack["fragmentedGpus"] += free
    return dict(sorted(out.items()))


def report(name: str, snapshot: s.ClusterSnapshot, plan: Plan) -> dict[str, Any]:
    o = plan.objective
    return {
        "snapshot": name,
        "status": plan.status,
        "admitted": [w.name for w in plan.workloads if w.satisfied],
        "notAdmitted": {w.name: w.reason for w in plan.workloads if not w.satisfied},
        "evictions": [e.pod for e in plan.evictions],
        "preemptionCost": o.preemption_cost,
        "preemptionCostBound": o.preemption_cost_bound,
        "gap": o.gap,
        "gapTier": o.gap_tier,
        "pdbViolations": o.pdb_violations,
        "fragmentationBefore": fragmentation(snapshot, None),
        "fragmentationAfter": fragmentation(snapshot, plan),
        "stats": {k: plan.stats.get(k) for k in ("nodes", "runningPods", "pendingPods", "variables",
                                                 "buildSeconds", "solveSeconds")},
    }
