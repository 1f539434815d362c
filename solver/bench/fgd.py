"""The FGD GPU-sharing protocol on the openb trace, with the GPUs as DRA devices.

The trace (Alibaba cluster-trace-gpu-v2023, "openb") and the protocol are those of Weng et
al., *Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
Descent*, USENIX ATC'23 (cite it; the data is read from wherever it lies, never copied into
this repository). The authors' per-seed results (``fgd-expected-results/``) are read from
the same place and printed beside ours, never typed in.

The cluster: the 1,213 GPU nodes (``openb_node_list_gpu_node.csv``). Each GPU is a DRA
device of the node's ResourceSlice (driver ``gpu.openb``, attribute ``model``), shared by
consumable capacity: ``allowMultipleAllocations`` and a capacity ``milli`` of 1000.

A task (a row of a pod list) is one pod: its cpu and memory as container requests and,
with GPUs, one claim of ``num_gpu`` devices each asking ``gpu_milli`` of ``milli`` (a whole
GPU asks all 1000, so only a free GPU takes it); a ``gpu_spec`` is a CEL selector on the
model. CPU-only tasks ask no claim.

Arrivals (``arrivals``): the pod list shuffled by the seed, with Go's ``math/rand`` as the
authors' simulator does (so seed for seed the same order), then clones drawn from it until
the GPU milli asked reaches ``tune`` (1.3) times the cluster's; each task is placed at
arrival or fails, and nothing ever leaves. At each whole percent k of arrived GPU requests (the GPU
milli asked by every arrived task, placed or not, over the cluster's) the allocation ratio
(GPU milli allocated over the cluster's) is recorded.

Placement (``run``): one task at a time (or a window of them), as gangplace plans it
(``api.plan`` on a snapshot of the cluster as it is then) or as its upstream-greedy baseline
does. Tasks never leave and nothing may be preempted: what a node's tasks use is one running
pod whose claim holds a share of each GPU they use (``objects``). Nodes in the same state
(model, cpu, memory and the GPUs' room) are interchangeable, so the snapshot holds one of
each state (the first by name, or in the plan's own tie order); the plan's node stands for
its state. Offline (``offline_steps``), every arrival is known at once: the whole-GPU tasks
largest first, then the shares node by node, each node's plan weighing them by the GPU milli
they ask, then each node with GPU milli idle planned again with a donor node (tasks may move),
then the CPU-only tasks.

Pure but for ``load_*``, which read the CSV files.
"""

from __future__ import annotations

import csv
import functools
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy

from solver.bench import gorand
from solver.core.errors import InputError
from solver.core.snapshot import ExpectedPod, SubRequest
from solver.kube.objects import VALUE_ANNOTATION
from solver.problem.build import DEFAULT_PDB_POLICY, PdbPolicy

DRIVER = "gpu.openb"
GPU_CLASS = "openb-gpu"
NS = "fgd"
MILLI = 1000
TUNE = 1.3
WORKLOADS_DIR = "csv"
RESULTS_DIR = "fgd-expected-results"


class FgdError(InputError, ValueError):
    """Bad trace input, naming the file and row."""


@dataclass(frozen=True, slots=True)
class GpuNode:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class Task:
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int  # per GPU
    spec: tuple[str, ...] = ()  # GPU models it may run on; () any

    @property
    def gpu_request(self) -> int:
        return self.num_gpu * self.gpu_milli


# ---- reading ---------------------------------------------------------------------------

def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as f:
        yield from enumerate(csv.DictReader(f), start=2)


def _int(path: Path, i: int, row: dict[str, str], column: str) -> int:
    raw = (row.get(column) or "").strip()
    if not raw.isdigit():
        raise FgdError(f"{path.name} row {i}: {column}: {raw[:40]!r} is not a non-negative integer")
    return int(raw)


def load_nodes(trace_dir: Path) -> list[GpuNode]:
    path = _csv_dir(trace_dir) / "openb_node_list_gpu_node.csv"
    out = []
    for i, row in _rows(path):
        gpus = _int(path, i, row, "gpu")
        if gpus == 0:
            continue
        out.append(GpuNode(name=row["sn"], cpu_milli=_int(path, i, row, "cpu_milli"),
                           memory_mib=_int(path, i, row, "memory_mib"), gpus=gpus, model=(row.get("model") or "")))
    return out


def load_tasks(trace_dir: Path, workload: str) -> list[Task]:
    path = _csv_dir(trace_dir) / f"{workload}.csv"
    if not path.exists():
        raise FgdError(f"{path}: no such pod list (workloads are named like openb_pod_list_default)")
    out = []
    for i, row in _rows(path):
        num_gpu, milli = _int(path, i, row, "num_gpu"), _int(path, i, row, "gpu_milli")
        if num_gpu and not 0 < milli <= MILLI:
            raise FgdError(f"{path.name} row {i}: gpu_milli: {milli} is not in 1..1000")
        spec = tuple(m for m in (row.get("gpu_spec") or "").split("|") if m)
        out.append(Task(name=row["name"], cpu_milli=_int(path, i, row, "cpu_milli"),
                        memory_mib=_int(path, i, row, "memory_mib"), num_gpu=num_gpu,
                        gpu_milli=milli if num_gpu else 0, spec=spec))
    return out


def _csv_dir(trace_dir: Path) -> Path:
    base = Path(trace_dir)
    return base / WORKLOADS_DIR if (base / WORKLOADS_DIR).is_dir() else base


# ---- the protocol ------------------------------------------------------------------------

def arrivals(tasks: Sequence[Task], capacity: int, seed: int, tune: float = TUNE) -> list[Task]:
    """The tasks in arrival order, seed for seed as the authors' simulator builds them
    (``SortClusterPods`` and ``TunePodsByNodeTotalResource``), from Go's ``math/rand`` seeded
    with ``seed`` (``gorand``): the tasks sorted by name and shuffled; then, below ``tune`` ×
    ``capacity`` of GPU milli asked, clones drawn with replacement from the sorted list,
    appended until the next one's per-GPU milli would pass the target (CPU-only clones always
    pass; a last multi-GPU clone may end the total above the target, as there); or, above the
    target, random tasks dropped until the total is within it."""
    if not any(t.gpu_request for t in tasks):
        raise FgdError("the pod list asks for no GPU: the protocol's arrivals never reach its target")
    by_name = sorted(tasks, key=lambda t: t.name)
    n, target = len(by_name), tune * capacity
    total = sum(t.gpu_request for t in by_name)
    if total > target:
        perm, drawn = gorand.draws(seed, n, n, shrink=True)
        order = [by_name[i] for i in perm]
        for i in drawn:
            if total <= target:
                break
            total -= order.pop(i).gpu_request
        return order
    count = n
    while True:  # the clones' draws, as many as it takes (a longer run draws the same prefix)
        perm, drawn = gorand.draws(seed, n, count)
        order, grown = [by_name[i] for i in perm], total
        for i in drawn:
            clone = by_name[i]
            if grown + clone.gpu_milli > target:
                return order
            order.append(clone)
            grown += clone.gpu_request
        count *= 4


# ---- fragmentation (the paper's measure) ----------------------------------------------------

@dataclass(frozen=True, slots=True)
class Typical:
    """A task shape of the pod list and its weight (``GetTypicalPods``): shapes by cpu, GPU milli,
    GPU count and spec (memory aside), most frequent first, up to 95 % of the tasks, weights
    renormalised."""

    cpu_milli: int
    gpu_milli: int
    num_gpu: int
    spec: tuple[str, ...]
    weight: float
    memory_mib: int = 0  # the least any task of the shape asks (not in the paper's measure)


def typical(tasks: Sequence[Task], popularity: float = 0.95) -> list[Typical]:
    counts: dict[tuple[int, int, int, tuple[str, ...]], int] = {}
    memory: dict[tuple[int, int, int, tuple[str, ...]], int] = {}
    for t in tasks:
        key = (t.cpu_milli, t.gpu_milli, t.num_gpu, t.spec)
        counts[key] = counts.get(key, 0) + 1
        memory[key] = min(memory.get(key, t.memory_mib), t.memory_mib)
    # most frequent first; ties: the larger shape first
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    kept, seen = [], 0
    for key, n in shapes:
        kept.append((key, n))
        seen += n
        if seen >= popularity * len(tasks):
            break
    return [Typical(cpu_milli=k[0], gpu_milli=k[1], num_gpu=k[2], spec=k[3], weight=n / seen, memory_mib=memory[k])
            for k, n in kept]


def node_frag(st: NodeState, shapes: Sequence[Typical]) -> float:
    """The GPU milli of one node that the typical tasks, weighted, cannot use."""
    return frag_of(st.node.model, st.cpu, st.free, shapes)


def frag_of(model: str, cpu: int, free: Sequence[int], shapes: Sequence[Typical]) -> float:
    """``node_frag`` of a node of ``model`` with ``cpu`` milli and its GPUs' ``free`` milli left."""
    idle = sum(free)
    out = 0.0
    for sh in shapes:
        if not sh.gpu_milli or (sh.spec and model not in sh.spec):
            out += sh.weight * idle  # a CPU-only task, or a model it may not use: every idle GPU milli
            continue
        fits = sum(1 for f in free if f >= sh.gpu_milli) >= sh.num_gpu
        if fits and cpu >= sh.cpu_milli:
            out += sh.weight * sum(f for f in free if f < sh.gpu_milli)  # GPUs too full for it
        else:
            out += sh.weight * idle
    return out


def frag_percent(cluster: Cluster, shapes: Sequence[Typical]) -> float:
    """The cluster's fragmented GPU milli, % of its GPU capacity ("Frag / Total")."""
    return 100 * sum(node_frag(st, shapes) for st in cluster.nodes) / cluster.capacity


@dataclass(frozen=True, slots=True)
class Placed:
    node: str
    task: Task
    gpus: tuple[int, ...]


@dataclass(slots=True)
class NodeState:
    node: GpuNode
    cpu: int
    memory: int
    free: list[int]  # per GPU, milli left

    def key(self) -> tuple[object, ...]:
        return (self.node.model, self.cpu, self.memory, tuple(sorted(self.free)))


@dataclass(slots=True)
class Cluster:
    nodes: list[NodeState]
    capacity: int = 0  # GPU milli
    allocated: int = 0
    by_name: dict[str, NodeState] = field(default_factory=dict)
    where: dict[str, Placed] = field(default_factory=dict)  # pod name -> where it runs

    def __post_init__(self) -> None:
        self.by_name = {st.node.name: st for st in self.nodes}

    @staticmethod
    def of(nodes: Sequence[GpuNode]) -> Cluster:
        states = [NodeState(n, n.cpu_milli, n.memory_mib, [MILLI] * n.gpus)
                  for n in sorted(nodes, key=lambda n: n.name)]
        return Cluster(nodes=states, capacity=MILLI * sum(n.gpus for n in nodes))

    def may_fit(self, st: NodeState, t: Task) -> bool:
        """Cpu, memory, model and GPU room (a quick filter; the plan decides)."""
        if st.cpu < t.cpu_milli or st.memory < t.memory_mib:
            return False
        if not t.num_gpu:
            return True
        if t.spec and st.node.model not in t.spec:
            return False
        return sum(1 for f in st.free if f >= t.gpu_milli) >= t.num_gpu

    def place(self, pod: str, name: str, t: Task, gpus: Sequence[int]) -> NodeState:
        """Task ``t`` as pod ``pod`` on node ``name``, on its GPUs ``gpus``."""
        st = self.by_name[name]
        if pod in self.where:
            raise FgdError(f"task {t.name}: pod {pod} already runs on node {self.where[pod].node}")
        if st.cpu < t.cpu_milli or st.memory < t.memory_mib or len(gpus) != t.num_gpu or len(set(gpus)) != len(gpus):
            raise FgdError(f"task {t.name} does not fit node {name} as planned")
        for g in gpus:
            if st.free[g] < t.gpu_milli:
                raise FgdError(f"task {t.name}: GPU {g} of node {name} has {st.free[g]} milli left")
            st.free[g] -= t.gpu_milli
        st.cpu -= t.cpu_milli
        st.memory -= t.memory_mib
        self.allocated += t.gpu_request
        self.where[pod] = Placed(name, t, tuple(gpus))
        return st

    def lift(self, pod: str) -> Placed:
        """Pod ``pod`` taken off its node (offline plans may move a task); where it was."""
        p = self.where.pop(pod)
        st = self.by_name[p.node]
        for g in p.gpus:
            st.free[g] += p.task.gpu_milli
        st.cpu += p.task.cpu_milli
        st.memory += p.task.memory_mib
        self.allocated -= p.task.gpu_request
        return p

    def on(self, st: NodeState) -> list[tuple[str, Task]]:
        """The pods (name, task) running on node ``st``."""
        return [(pod, p.task) for pod, p in self.where.items() if p.node == st.node.name]


# ---- the cluster and a task as Kubernetes objects -----------------------------------------

def objects(cluster: Cluster, tasks: Sequence[tuple[str, Task]], rank: Callable[[str], Any] | None = None,
            *, only: Sequence[NodeState] = (), valued: bool = False) -> tuple[list[dict[str, Any]], set[str]]:
    """The snapshot gangplace plans tasks (pod name, task) on: of the nodes in each state that
    may take one of them, as many as there are tasks (the first by name, or by ``rank``: the
    plan's own order among equals, so that it picks the node it would among all), each with its whole
    allocatable, what the tasks placed there use as one running pod (``used-<node>``) whose
    claim holds a share of each GPU they use (consumedCapacity), and the GPUs as devices; the
    GPU class; each task's pod and the claim templates (one per GPU request, shared by the tasks
    that ask it alike). Also the names of the nodes it holds. ``only``: those nodes alone.
    ``valued``: each task worth the GPU milli it asks in the plan's first tier (gangplace.io/value)."""
    objs: list[dict[str, Any]] = [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                   "metadata": {"name": GPU_CLASS},
                                   "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}]
    seen: dict[tuple[object, ...], int] = {}
    names: set[str] = set()
    states = list(only) if only else \
        cluster.nodes if rank is None else sorted(cluster.nodes, key=lambda st: rank(st.node.name))
    for st in states:
        key = st.key()
        if seen.get(key, 0) >= len(tasks) or not any(cluster.may_fit(st, t) for _, t in tasks):
            continue
        seen[key] = seen.get(key, 0) + 1
        n = st.node
        names.add(n.name)
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": {
            "kubernetes.io/hostname": n.name}}, "status": {"allocatable": {
                "cpu": f"{n.cpu_milli}m", "memory": f"{n.memory_mib}Mi", "pods": "10000"}}})
        objs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": n.name},
                     "spec": {"driver": DRIVER, "pool": {"name": n.name, "generation": 1, "resourceSliceCount": 1},
                              "nodeName": n.name, "devices": [
                                  {"name": f"gpu-{g}", "attributes": {"model": {"string": n.model}},
                                   "allowMultipleAllocations": True, "capacity": {"milli": {"value": str(MILLI)}}}
                                  for g in range(n.gpus)]}})
        if st.cpu < n.cpu_milli or st.memory < n.memory_mib or any(f < MILLI for f in st.free):
            objs.extend(_used(st))
    templates: set[str] = set()
    for name, t in tasks:
        for obj in _task(name, t, valued):
            if obj["kind"] == "ResourceClaimTemplate":
                if obj["metadata"]["name"] in templates:
                    continue
                templates.add(obj["metadata"]["name"])
            objs.append(obj)
    return objs, names


def _task(name: str, t: Task, valued: bool = False) -> list[dict[str, Any]]:
    """A task's pod and (with GPUs) the claim template of its GPU request, named by it."""
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                           "spec": {"containers": [{"name": "task", "resources": {"requests": {
                               "cpu": f"{t.cpu_milli}m", "memory": f"{t.memory_mib}Mi"}}}]}}
    if valued:
        pod["metadata"]["annotations"] = {VALUE_ANNOTATION: str(t.gpu_request)}
    if not t.num_gpu:
        return [pod]
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "count": t.num_gpu,
                               "capacity": {"requests": {"milli": str(t.gpu_milli)}}}
    models = sorted(set(t.spec))
    if models:
        exactly["selectors"] = [{"cel": {"expression": _models_selector(models)}}]
    template = f"gpu-{t.num_gpu}x{t.gpu_milli}" + "".join(f"-{m.lower()}" for m in models)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template}]
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
             "metadata": {"name": template, "namespace": NS},
             "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}, pod]


def _models_selector(spec: Sequence[str]) -> str:
    """The CEL selector of a task's ``gpu_spec``: a GPU of one of those models."""
    models = ", ".join(f'"{m}"' for m in spec)
    return f'device.attributes["{DRIVER}"].model in [{models}]'


def _used(st: NodeState) -> list[dict[str, Any]]:
    """What the tasks on a node use, as one running pod and (with GPUs) its allocated claim."""
    n, name = st.node, f"used-{st.node.name}"
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
                           "spec": {"nodeName": n.name, "containers": [{"name": "tasks", "resources": {"requests": {
                               "cpu": f"{n.cpu_milli - st.cpu}m", "memory": f"{n.memory_mib - st.memory}Mi"}}}]},
                           "status": {"phase": "Running"}}
    results = [{"request": "gpu", "driver": DRIVER, "pool": n.name, "device": f"gpu-{g}", "shareID": f"{name}-{g}",
                "consumedCapacity": {"milli": str(MILLI - left)}} for g, left in enumerate(st.free) if left < MILLI]
    if not results:
        return [pod]
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": GPU_CLASS,
                                                                          "allocationMode": "All"}}]}},
             "status": {"allocation": {"devices": {"results": results}},
                        "reservedFor": [{"resource": "pods", "name": name, "uid": name}]}}
    return [pod, claim]


# ---- a run ---------------------------------------------------------------------------------

# a policy places tasks: the objects -> pod name -> (node, GPU indices); a task left out fails
Policy = Callable[[list[dict[str, Any]]], dict[str, tuple[str, list[int]]]]


@dataclass(slots=True)
class Run:
    policy: str
    seed: int
    arrived: int = 0
    placed: int = 0
    seconds: float = 0.0
    # k -> mean over the attempts made while arrived GPU requests rounded to k % of capacity:
    # the allocation ratio (%), and the fragmented GPU milli (% of capacity), as the paper's
    # analysis discretises them
    alloc: dict[int, float] = field(default_factory=dict)
    frag: dict[int, float] = field(default_factory=dict)
    final: float = 0.0  # the allocation ratio (%) once every arrival was attempted
    bound: float | None = None  # a proven upper bound on ``final`` for these arrivals (``bound``)
    offline: bool = False  # attempted largest first: its columns are not the arrivals'


def discrete(samples: dict[int, list[float]], top: int) -> dict[int, float]:
    """k -> mean of the samples at k; a k without any: those at k-1..k+1; to 2 places (all as
    the paper's scripts compute it, to the last digit)."""
    out = {}
    for k in range(top + 1):
        near = samples.get(k) or [v for j in (k - 1, k, k + 1) for v in samples.get(j, ())]
        if near:
            out[k] = _hundredths(float(numpy.mean(near)))  # numpy's pairwise sum, as pandas's mean
    return out


def percents(asked: float, amounts: Sequence[float], capacity: int) -> tuple[int, list[float]]:
    """A sample as the authors' analysis takes it: the arrived GPU requests' whole percent of
    the cluster's GPUs (half to even), and each amount's percent to 2 places, each computed
    as there (milli over GPUs over 10)."""
    gpus = capacity / MILLI
    return round(asked / gpus / 10), [_hundredths(a / gpus / 10) for a in amounts]


def _hundredths(x: float) -> float:
    """``x`` to 2 places as numpy rounds (the authors' scripts): x·100 to the nearest integer,
    half to even, over 100 (Python's ``round(x, 2)`` rounds the decimal value: 87.945 is not
    87.94 there)."""
    return round(x * 100) / 100


def largest_first(order: Sequence[Task]) -> list[Task]:
    """The offline order: every arrival known at once, attempted by GPU milli asked, then GPUs,
    cpu and memory, largest first (first-fit decreasing); ties keep the arrival order."""
    return sorted(order, key=lambda t: (-t.gpu_request, -t.num_gpu, -t.cpu_milli, -t.memory_mib))


def run(nodes: Sequence[GpuNode], tasks: Sequence[Task], seed: int, policy_name: str, policy: Policy, *,
        tune: float = TUNE, window: int = 1, offline: bool = False, rank: Callable[[str], Any] | None = None,
        progress: Callable[[Run, int], None] | None = None,
        direct: Callable[[Cluster, Sequence[tuple[str, Task]]], dict[str, tuple[str, list[int]]]] | None = None
        ) -> Run:
    """One seed of the protocol under ``policy``: the arrivals in windows of ``window`` tasks
    (1: online, each on arrival), each window placed jointly or failed; the allocation ratio and
    the fragmentation (against ``typical(tasks)``) sampled after every attempt (in a window,
    every task of it sees the window's outcome). ``direct``: a rule on the cluster's state
    (``FgdRule``) instead of ``policy``'s plan of its objects. ``offline``: the same arrivals, all known at
    once (``offline_steps``); only ``final`` compares with the online runs."""
    cluster = Cluster.of(nodes)
    order = arrivals(tasks, cluster.capacity, seed, tune)
    named = [(f"t{i}-{t.name}", t) for i, t in enumerate(largest_first(order) if offline else order)]
    shapes = typical(tasks)
    per_node = {st.node.name: node_frag(st, shapes) for st in cluster.nodes}
    out = Run(policy=policy_name, seed=seed, offline=offline)
    alloc: dict[int, list[float]] = {}
    frag: dict[int, list[float]] = {}
    asked, fragmented = 0, sum(per_node.values())
    start = time.perf_counter()
    on_cluster = functools.partial(objects, cluster, rank=rank)
    steps = offline_steps(cluster, named, window, on_cluster) if offline else \
        (Step(named[first:first + window], on_cluster, True) for first in range(0, len(named), window))
    for batch, snapshot, arrive, lift in steps:
        moved = {name: cluster.lift(name) for name, _ in batch if lift and name in cluster.where}
        if direct is not None:  # a rule on the cluster's state, not a plan of its objects
            chosen = direct(cluster, batch)
        else:
            objs, names = snapshot(batch)
            chosen = policy(objs) if names else {}  # no node may take any: they fail
        for name, t in batch:
            if name in chosen:
                cluster.place(name, chosen[name][0], t, chosen[name][1])
        if sum(t.gpu_request for name, t in batch if name in chosen) < \
                sum(p.task.gpu_request for p in moved.values()):  # a plan is kept only if it allocates no less
            for name in chosen:
                cluster.lift(name)
            for name, p in moved.items():
                cluster.place(name, p.node, p.task, p.gpus)
        for node in {p.node for p in moved.values()} | {node for node, _ in chosen.values()}:
            fragmented -= per_node[node]
            per_node[node] = node_frag(cluster.by_name[node], shapes)
            fragmented += per_node[node]
        out.placed = len(cluster.where)
        for _, t in batch if arrive else ():
            asked += t.gpu_request
            out.arrived += 1
            k, ratios = percents(asked, (cluster.allocated, fragmented), cluster.capacity)
            alloc.setdefault(k, []).append(ratios[0])
            frag.setdefault(k, []).append(ratios[1])
        if progress is not None:
            progress(out, out.arrived)
    out.seconds = time.perf_counter() - start
    out.final = round(100 * cluster.allocated / cluster.capacity, 2)
    top = round(tune * 100)
    out.alloc, out.frag = discrete(alloc, top), discrete(frag, top)
    return out


Snapshot = Callable[[Sequence[tuple[str, Task]]], tuple[list[dict[str, Any]], set[str]]]


class FgdRule:
    """FGD itself as a policy of the same harness (issue 50, item 15): each task on arrival to
    the node whose fragmentation, against the typical tasks, it lowers most, by the authors'
    integer score (the simulator's ``FGDScorePlugin``, read, not copied:
    ``int(sigmoid((before - after) / 1000) * 100)``); a GPU share to the GPU that scores best,
    the first of equal ones; whole GPUs to free ones; equal node scores to the first node of
    an order the seed shuffles once (the simulator's node order, as the lab notes' simulation of
    FGD takes it, journal/fgd-2026-12.md: a fresh random pick at every task spreads the tasks
    and lost 5 points on seed 42). Its filter is ``Cluster.may_fit`` (cpu, memory, model, GPU
    room). Fragmentation is remembered by node state. Online only (``--fgd-window 1``)."""

    def __init__(self, shapes: Sequence[Typical], seed: int) -> None:
        self.shapes = shapes
        self.seed = seed
        self.rank: dict[str, int] = {}
        self.memo: dict[tuple[str, int, tuple[int, ...]], float] = {}

    def frag(self, model: str, cpu: int, free: Sequence[int]) -> float:
        key = (model, cpu, tuple(sorted(free)))
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = frag_of(model, cpu, free, self.shapes)
        return got

    def choice(self, st: NodeState, t: Task) -> tuple[int, list[int]]:
        """The score of ``t`` on node ``st`` and the GPUs it would take there."""
        model, before = st.node.model, self.frag(st.node.model, st.cpu, st.free)

        def scored(after: float) -> int:
            x = max(-50.0, min(50.0, (before - after) / MILLI))
            return int(100 / (1 + math.exp(-x)))

        cpu = st.cpu - t.cpu_milli
        if t.num_gpu == 1 and t.gpu_milli < MILLI:
            best, gpu = -1, -1
            for i, f in enumerate(st.free):
                if f >= t.gpu_milli:
                    free = list(st.free)
                    free[i] -= t.gpu_milli
                    score = scored(self.frag(model, cpu, free))
                    if score > best:
                        best, gpu = score, i
            return best, [gpu]
        whole = [i for i, f in enumerate(st.free) if f >= t.gpu_milli][:t.num_gpu]
        free = list(st.free)
        for i in whole:
            free[i] -= t.gpu_milli
        return scored(self.frag(model, cpu, free)), whole

    def __call__(self, cluster: Cluster, batch: Sequence[tuple[str, Task]]) -> dict[str, tuple[str, list[int]]]:
        if len(batch) > 1:
            raise FgdError("the FGD rule places each task on arrival: --fgd-window 1")
        if not self.rank:
            order = sorted(st.node.name for st in cluster.nodes)
            random.Random(self.seed).shuffle(order)
            self.rank = {name: i for i, name in enumerate(order)}
        out: dict[str, tuple[str, list[int]]] = {}
        for name, t in batch:
            best: tuple[int, int] = (-1, 0)
            chosen = None
            for st in cluster.nodes:
                if not cluster.may_fit(st, t):
                    continue
                score, gpus = self.choice(st, t)
                if (score, -self.rank[st.node.name]) > best:
                    best, chosen = (score, -self.rank[st.node.name]), (st.node.name, gpus)
            if chosen is not None:
                out[name] = chosen
        return out


class Step(NamedTuple):
    """One step of a run."""

    batch: list[tuple[str, Task]]  # the tasks (pod name, task) attempted together
    # the snapshot they are planned on (``objects``), made when the step is taken: the
    # cluster as the steps before left it
    snapshot: Snapshot
    # the step counts them as arrived (offline, a share is attempted node after node and
    # counted once, after its last node)
    arrive: bool
    # those of them running are lifted first and planned again with the rest; the plan is
    # kept if it allocates at least the GPU milli they did, else they go back
    lift: bool = False


def offline_steps(cluster: Cluster, named: Sequence[tuple[str, Task]], window: int,
                  on_cluster: Snapshot) -> Iterator[Step]:
    """Every arrival known at once (``named``, largest first), in four parts:

    1. the tasks of whole GPUs, ``window`` at a time, each window planned on the cluster;
    2. the shares (a part of one GPU) node by node, the nodes with the least GPU milli left
       first: each node's plan holds every share left that may fit it (per shape at most as
       many as its GPUs, cpu and memory could hold), each worth the GPU milli it asks
       (``valued``), so the plan's first tier keeps the shares that fill the node's GPUs
       most: a subset sum over the shares, decided by gangplace's model;
    3. pairs: each node with GPU milli still idle (most idle first) is planned again with
       a donor, the node with the most cpu left per GPU that its tasks may use: both nodes'
       tasks (lifted) and every task with GPUs left that may fit beside the node's own (as
       if it were empty) or on the donor as it is, valued as in 2; so a task asking much cpu
       per GPU may swap onto the donor for one asking less, and the node's GPUs be summed
       again with the cpu that frees. Kept only if it allocates no less;
    4. the CPU-only tasks (they add no GPU milli), ``window`` at a time.

    ``on_cluster``: the snapshot of a batch on the whole cluster."""
    whole = [(n, t) for n, t in named if t.gpu_milli >= MILLI]
    shares = [(n, t) for n, t in named if 0 < t.gpu_milli < MILLI]
    cpu_only = [(n, t) for n, t in named if not t.num_gpu]

    def nowhere(batch: Sequence[tuple[str, Task]]) -> tuple[list[dict[str, Any]], set[str]]:
        return [], set()

    for first in range(0, len(whole), window):
        yield Step(whole[first:first + window], on_cluster, True)
    left = dict(shares)
    for st in sorted((st for st in cluster.nodes if any(st.free)), key=lambda st: (sum(st.free), st.node.name)):
        batch = _may_fit([st], left)
        if batch:
            yield Step(batch, functools.partial(objects, cluster, only=[st], valued=True), False)
            for name in [n for n, _ in batch if n in cluster.where]:
                del left[name]
    for st in sorted((st for st in cluster.nodes if any(st.free)), key=lambda st: (-sum(st.free), st.node.name)):
        own = cluster.on(st)
        hosts = (o for o in cluster.nodes if o is not st and all(not t.spec or o.node.model in t.spec for _, t in own))
        donor = min(hosts, key=lambda o: (-o.cpu / o.node.gpus, o.node.name), default=None)
        if donor is None or not any(st.free):
            continue
        left = {n: t for n, t in whole + shares if n not in cluster.where}
        emptied = NodeState(st.node, st.node.cpu_milli, st.node.memory_mib, [MILLI] * st.node.gpus)
        batch = cluster.on(donor) + _may_fit([emptied, donor], dict(own + list(left.items())))
        yield Step(batch, functools.partial(objects, cluster, only=[st, donor], valued=True), False, lift=True)
    yield Step(shares, nowhere, True)  # every share counted as arrived, once
    for first in range(0, len(cpu_only), window):
        yield Step(cpu_only[first:first + window], on_cluster, True)


def _may_fit(states: Sequence[NodeState], left: Mapping[str, Task]) -> list[tuple[str, Task]]:
    """The tasks with GPUs in ``left`` (in its order) that nodes ``states`` might take: of each
    shape (cpu, memory, GPUs, GPU milli, models) at most as many as the nodes' GPUs' milli
    left, cpu and memory could hold, node by node."""
    out: list[tuple[str, Task]] = []
    room: dict[tuple[int, int, int, int, tuple[str, ...]], int] = {}
    for name, t in left.items():
        shape = (t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.spec)
        if shape not in room:
            room[shape] = sum(min(
                sum(f // t.gpu_milli for f in st.free) // t.num_gpu,
                st.cpu // t.cpu_milli if t.cpu_milli else len(left),
                st.memory // t.memory_mib if t.memory_mib else len(left))
                for st in states if not t.spec or st.node.model in t.spec)
        if room[shape] > 0:
            room[shape] -= 1
            out.append((name, t))
    return out


# ---- a proven upper bound on the allocation ratio ----------------------------------------------

@dataclass(frozen=True, slots=True)
class Bound:
    percent: float  # no placement of the arrivals allocates more of the cluster's GPU milli
    milli: int
    proven_optimal: bool  # the relaxation was solved to optimality (else its bound is quoted)
    seconds: float


Kind = tuple[str, int, int, int]  # model, cpu, memory, GPUs
Shape = tuple[int, int, int, int, tuple[str, ...]]  # cpu, memory, GPUs, milli per GPU, models


def bound(nodes: Sequence[GpuNode], order: Sequence[Task], *, time_limit: float = 60.0) -> Bound:
    """An upper bound on the GPU milli any placement of ``order`` allocates, from a relaxation
    solved by CP-SAT: nodes alike (model, cpu, memory, GPUs) pooled into one bin per kind, tasks
    alike into one count per shape, so the integers are how many tasks of a shape each kind
    takes. Per kind the pooled cpu, memory and GPU milli hold, each shape at most as many per
    node as one node fits, and no GPU holds two tasks over half a GPU (whole GPUs included).
    And per kind its GPUs are whole-task GPUs or hold a *pattern*: a multiset of the shares
    asked (milli under 1000) that sums to at most 1000 and that no further share available
    fits (``patterns``); the shares of each size the kind takes are at most what its patterns
    hold. Any GPU's shares extend to such a pattern, so every placement of the tasks is a
    solution of it; CPU-only tasks only take room, so they are left out. The bound quoted is
    CP-SAT's proven objective bound, rounded up."""
    from ortools.sat.python import cp_model

    kinds: dict[Kind, int] = {}
    for node in nodes:
        kind = (node.model, node.cpu_milli, node.memory_mib, node.gpus)
        kinds[kind] = kinds.get(kind, 0) + 1
    shapes: dict[Shape, int] = {}
    for t in order:
        if t.num_gpu:
            shape = (t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.spec)
            shapes[shape] = shapes.get(shape, 0) + 1
    capacity = MILLI * sum(node.gpus for node in nodes)
    m = cp_model.CpModel()
    taken: dict[Kind, list[tuple[cp_model.IntVar, Shape]]] = {}
    per_shape: dict[Shape, list[cp_model.IntVar]] = {}
    for kind, n in kinds.items():
        model, cpu, mem, gpus = kind
        for shape, count in shapes.items():
            t_cpu, t_mem, num, milli, spec = shape
            if num > gpus or (spec and model not in spec) or t_cpu > cpu or t_mem > mem:
                continue
            one = min(cpu // t_cpu if t_cpu else count, mem // t_mem if t_mem else count,
                      gpus * (MILLI // milli) // num)
            y = m.new_int_var(0, min(count, n * one), f"y{len(per_shape)}_{len(taken)}")
            taken.setdefault(kind, []).append((y, shape))
            per_shape.setdefault(shape, []).append(y)

    def pooled(ys: list[tuple[cp_model.IntVar, Shape]], weight: Callable[[Shape], int]) -> cp_model.LinearExpr:
        return cp_model.LinearExpr.weighted_sum([y for y, _ in ys], [weight(s) for _, s in ys])

    sizes: dict[int, int] = {}  # share size -> shares asked of it
    for (_, _, num, milli, _), count in shapes.items():
        if milli < MILLI:
            sizes[milli] = sizes.get(milli, 0) + num * count
    pats = patterns(sizes)
    for kind, ys in taken.items():
        n, (_, cpu, mem, gpus) = kinds[kind], kind
        m.add(pooled(ys, lambda s: s[0]) <= n * cpu)
        m.add(pooled(ys, lambda s: s[1]) <= n * mem)
        m.add(pooled(ys, lambda s: s[2] * s[3]) <= n * gpus * MILLI)
        m.add(pooled(ys, lambda s: s[2] if 2 * s[3] > MILLI else 0) <= n * gpus)
        if pats is None:
            continue
        holding = [m.new_int_var(0, n * gpus, f"q{i}") for i in range(len(pats))]  # GPUs holding each pattern
        m.add(pooled(ys, lambda s: s[2] if s[3] == MILLI else 0) + cp_model.LinearExpr.sum(holding) <= n * gpus)
        for milli in sizes:
            def of_size(s: Shape, milli: int = milli) -> int:
                return s[2] if s[3] == milli else 0
            m.add(pooled(ys, of_size) <= cp_model.LinearExpr.weighted_sum(holding, [p.get(milli, 0) for p in pats]))
    for shape, counted in per_shape.items():
        m.add(cp_model.LinearExpr.sum(counted) <= shapes[shape])
    m.maximize(cp_model.LinearExpr.sum([pooled(ys, lambda s: s[2] * s[3]) for ys in taken.values()]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 2
    start = time.perf_counter()
    status = solver.solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise FgdError(f"the relaxation found no bound in {time_limit:g} s ({solver.status_name(status)})")
    milli_bound = min(int(solver.best_objective_bound + 0.5), capacity)  # the objective is integral
    percent = -(-10000 * milli_bound // capacity) / 100  # rounded up to the hundredth
    return Bound(percent=percent, milli=milli_bound, proven_optimal=status == cp_model.OPTIMAL,
                 seconds=time.perf_counter() - start)


MAX_PATTERNS = 20_000


def patterns(sizes: Mapping[int, int]) -> list[dict[int, int]] | None:
    """Every maximal multiset of share sizes (milli -> how many of it) whose sum is at most a
    GPU, using each size at most as often as it is asked (``sizes``): maximal, no size still
    available fits beside it. None past MAX_PATTERNS (the bound then goes without them)."""
    order = sorted(sizes, reverse=True)
    out: list[dict[int, int]] = []
    current: dict[int, int] = {}

    def walk(i: int, room: int) -> bool:
        if i == len(order):
            if not any(m <= room and current.get(m, 0) < sizes[m] for m in order):
                out.append(dict(current))
            return len(out) <= MAX_PATTERNS
        size = order[i]
        for k in range(min(sizes[size], room // size), -1, -1):
            if k:
                current[size] = k
            else:
                current.pop(size, None)
            if not walk(i + 1, room - k * size):
                return False
        current.pop(size, None)
        return True

    return out if walk(0, MILLI) else None


def expected_pods(shapes: Sequence[Typical]) -> tuple[ExpectedPod, ...]:
    """The typical tasks as gangplace's expected pods (``PlanOptions.expected``): what FGD is
    given, in the same units (cpu as FGD's fit checks it; a GPU request per the shape), and
    one thing more: each shape's least memory, so that a node whose memory is spent counts as
    of no use to it, as it is (FGD's measure has no memory; docs/fgd.md)."""
    out = []
    for i, sh in enumerate(shapes):
        device = None
        if sh.num_gpu:
            device = SubRequest(name="device", device_class=GPU_CLASS, count=sh.num_gpu,
                                capacity=(("milli", sh.gpu_milli * 1000),),  # milli-units of the quantity
                                selectors=(_models_selector(sh.spec),) if sh.spec else ())
        requests = tuple((r, a) for r, a in (("cpu", sh.cpu_milli), ("memory", sh.memory_mib << 20)) if a)
        out.append(ExpectedPod(name=f"typical-{i}", weight=sh.weight, requests=requests, device=device))
    return tuple(out)


def planner(*, baseline: bool = False, time_limit: float = 10.0, check: bool = True,
            pdb_policy: PdbPolicy = DEFAULT_PDB_POLICY, expected: Sequence[ExpectedPod] = (),
            seed: int = 0) -> Policy:
    """gangplace (``api.plan``), or its upstream-greedy baseline, as a policy; ``check``: every
    plan passes the verifier. The protocol has no budgets (and nothing is preempted), so both
    PDB policies give the same plans. ``expected`` and ``seed`` as ``PlanOptions``'s."""
    from solver import api, reading, verify

    options = api.PlanOptions(time_limit=time_limit, baseline_only=baseline, pdb_policy=pdb_policy,
                              expected=tuple(expected), seed=seed)

    def place(objs: list[dict[str, Any]]) -> dict[str, tuple[str, list[int]]]:
        snap = reading.read(objs)
        plan = api.plan(snap, options)
        if check:
            problems = verify.verify(snap.facts, snap, plan)
            if problems:
                raise FgdError(f"the plan fails the verifier: {problems[0]}")
        gpus: dict[str, list[int]] = {}
        for a in plan.device_allocations:
            gpus.setdefault(a.pod.split("/", 1)[1], []).extend(int(d.device.removeprefix("gpu-")) for d in a.devices)
        return {b.pod.split("/", 1)[1]: (b.node, gpus.get(b.pod.split("/", 1)[1], [])) for b in plan.bindings}

    return place



# ---- the report ----------------------------------------------------------------------------

def seeds_arg(text: str) -> list[int]:
    """``42-51`` or ``42,43`` -> the seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"seeds: {text[:40]!r} is not like 42-51 or 42,43")
        out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    if not out:
        raise ValueError("seeds: none given")
    return out


def published(trace_dir: Path, workload: str) -> list[dict[str, str]]:
    """The authors' numbers for ``workload`` (``summary_mean_over_seeds.csv``: per policy, the
    mean and deviation over seeds 42-51 of the allocation ratio at 100 % and 130 % and the
    fragmentation at 100 %); [] when the file is not there."""
    path = Path(trace_dir) / RESULTS_DIR / "summary_mean_over_seeds.csv"
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        return [row for row in csv.DictReader(f) if row.get("workload") == workload]


def published_seeds(trace_dir: Path, workload: str) -> dict[str, dict[int, dict[int, float]]]:
    """The authors' runs of ``workload`` seed by seed (``analysis_allo_discrete.csv``): policy ->
    seed -> {100: allocation ratio at 100 %, 130: at 130 %}; {} when the file is not there."""
    path = Path(trace_dir) / RESULTS_DIR / "analysis_allo_discrete.csv"
    if not path.exists():
        return {}
    out: dict[str, dict[int, dict[int, float]]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row.get("workload") == workload:
                out.setdefault(row["sc_policy"], {})[int(row["seed"])] = {
                    k: float(row[str(k)]) for k in (100, round(TUNE * 100)) if row.get(str(k))}
    return out


def _mean_std(values: Sequence[float], *, sign: bool = False) -> str:
    if not values:
        return "-"
    mean = sum(values) / len(values)
    shown = f"{mean:+.2f}" if sign else f"{mean:.2f}"
    if len(values) == 1:
        return shown
    std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{shown} ±{std:.2f}"


def table(workload: str, runs: Sequence[Run], paper: Sequence[dict[str, str]], nodes: int, gpus: int,
          by_seed: Mapping[str, Mapping[int, Mapping[int, float]]] | None = None) -> str:
    """Our runs per policy (mean ± sample deviation over the seeds) beside the paper's; with
    ``by_seed`` (``published_seeds``), each online policy of ours paired seed for seed with
    each of theirs: the arrivals are the same, so the difference per seed is the policy's."""
    seeds = sorted({r.seed for r in runs})
    lines = [f"FGD protocol, {workload}: {nodes} GPU nodes, {gpus} GPUs, arrivals to {round(TUNE * 100)} % of "
             f"GPU capacity, seeds {','.join(map(str, seeds))}",
             f"{'policy':<26}{'alloc % @100':>16}{'alloc % @130':>16}{'frag % @100':>16}{'final %':>16}"
             f"{'bound %':>9}{'s/seed':>9}"]
    for policy in dict.fromkeys(r.policy for r in runs):
        mine = [r for r in runs if r.policy == policy]
        bounds = [r.bound for r in mine if r.bound is not None]
        lines.append(f"{'gangplace ' + policy if policy.startswith('baseline') else policy:<26}"
                     f"{_mean_std([r.alloc[100] for r in mine if 100 in r.alloc]):>16}"
                     f"{_mean_std([r.alloc[round(TUNE * 100)] for r in mine if round(TUNE * 100) in r.alloc]):>16}"
                     f"{_mean_std([r.frag[100] for r in mine if 100 in r.frag]):>16}"
                     f"{_mean_std([r.final for r in mine]):>16}"
                     f"{f'{sum(bounds) / len(bounds):.2f}' if len(bounds) == len(mine) else '-':>9}"
                     f"{sum(r.seconds for r in mine) / len(mine):>9.1f}")
    if paper:
        lines.append("published (Weng et al., USENIX ATC'23; fgd-expected-results, seeds 42-51):")
        lines.extend(f"{row['sc_policy']:<26}"
                     f"{row['gpu_alloc_pct_at_100_mean'] + ' ±' + row['gpu_alloc_pct_at_100_std']:>16}"
                     f"{row['gpu_alloc_pct_at_130_mean'] + ' ±' + row['gpu_alloc_pct_at_130_std']:>16}"
                     f"{row['frag_amount_at_100_mean']:>16}" for row in paper)
    lines.extend(_paired(runs, by_seed or {}))
    return "\n".join(lines)


def _paired(runs: Sequence[Run], by_seed: Mapping[str, Mapping[int, Mapping[int, float]]]) -> list[str]:
    top = round(TUNE * 100)
    out: list[str] = []
    rows: list[tuple[str, str, str, str]] = []
    for policy in dict.fromkeys(r.policy for r in runs if not r.offline):
        mine = {r.seed: r.alloc for r in runs if r.policy == policy and not r.offline}
        for theirs, seeds in by_seed.items():
            both = [s for s in sorted(mine) if s in seeds and all(k in mine[s] and k in seeds[s] for k in (100, top))]
            if not both:
                continue
            if not out:
                out.append("paired seed for seed with the published runs (the same arrivals): ours minus theirs, "
                           f"mean ± deviation; seeds where ours is higher @{top}")
            diff = {k: [mine[s][k] - seeds[s][k] for s in both] for k in (100, top)}
            higher = sum(d > 0 for d in diff[top])
            rows.append((f"{policy} - {theirs}", _mean_std(diff[100], sign=True), _mean_std(diff[top], sign=True),
                         f"{higher}/{len(both)}"))
    width = max([26] + [len(label) + 1 for label, *_ in rows])  # a long label widens them all alike
    out.extend(f"{label:<{width}}{a:>16}{b:>16}{n:>16}" for label, a, b, n in rows)
    return out


def to_json(workload: str, r: Run) -> dict[str, Any]:
    return {"fgd": workload, "policy": r.policy, "seed": r.seed, "arrived": r.arrived, "placed": r.placed,
            "seconds": round(r.seconds, 1), "alloc": r.alloc, "frag": r.frag, "final": r.final, "bound": r.bound}
