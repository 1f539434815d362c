"""Deterministic synthetic cluster snapshots, as Kubernetes object dicts.

zones -> blocks -> racks -> nodes, labelled with topology.kubernetes.io/{zone,block,rack}
and kubernetes.io/hostname; CPU nodes and GPU nodes (GPUs as the extended resource
``nvidia.com/gpu``); a background of running pods at a chosen utilisation with a mix of
priorities, some of them in ``disruptionMode: all`` PodGroups, some under PDBs; and pending
workloads: a PodGroup gang under a rack constraint, optionally a CompositePodGroup with a
zone constraint over rack-constrained PodGroups.

The same seed gives the same snapshot, byte for byte. Pure: returns dicts, writes nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

ZONE = "topology.kubernetes.io/zone"
BLOCK = "topology.kubernetes.io/block"
RACK = "topology.kubernetes.io/rack"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
NS = "bench"

PRIORITIES = (("batch-low", 10), ("batch-mid", 100), ("serving-high", 10000), ("training", 1000))


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateSpec:
    nodes: int = 1000
    pods_per_node: int = 10  # running background pods per node, on average
    utilisation: float = 0.7  # fraction of each node's cpu the background requests
    racks_per_block: int = 4
    blocks_per_zone: int = 4
    nodes_per_rack: int = 16
    gpu_fraction: float = 0.5  # share of racks made of GPU nodes
    all_group_fraction: float = 0.2  # share of background pods in `disruptionMode: all` groups
    gang_pods: int = 64
    gang_cpu_m: int = 8000
    gang_gpus: int = 1
    gang_topology: str = RACK
    composite_groups: int = 0  # >0 adds a CompositePodGroup (zone) of that many PodGroups (rack)
    composite_pods: int = 8  # pods per PodGroup of the composite
    dra: bool = False  # GPUs as DRA devices (ResourceSlices, claims) instead of nvidia.com/gpu
    seed: int = 0


DRIVER = "gpu.example.com"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


def _dra_objects() -> list[dict[str, Any]]:
    """The DeviceClass and the claim template the generated pods use."""
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    ]


def _claim_template(name: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": gpus}}]}}}}


def _slice(node: str) -> dict[str, Any]:
    """8 GPUs on ``node``, two PCIe roots of four."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                   "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}",
                                  "attributes": {"model": {"string": "H100"},
                                                 PCIE_ROOT: {"string": f"pci{i // 4}"}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for i in range(8)]}}


def _with_claim(pod: dict[str, Any], entry: str, *, template: str | None = None,
                claim: str | None = None) -> dict[str, Any]:
    ref: dict[str, str] = {"name": entry}
    if template:
        ref["resourceClaimTemplateName"] = template
    if claim:
        ref["resourceClaimName"] = claim
    pod["spec"]["resourceClaims"] = [ref]
    pod["spec"]["containers"][0]["resources"]["claims"] = [{"name": entry}]
    return pod


def _allocated_claim(name: str, pod: str, node: str, devices: list[int]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER,
                                                                          "count": len(devices)}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": DRIVER, "pool": node, "device": f"gpu-{i}"} for i in devices]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-{pod}"}]}}


def _node(name: str, zone: str, block: str, rack: str, gpu: bool, dra: bool = False) -> dict[str, Any]:
    alloc = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    if gpu and not dra:
        alloc[GPU] = "8"
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, BLOCK: block, RACK: rack, HOST: name,
                                              "node.kubernetes.io/instance-type": "gpu-8x" if gpu else "cpu-64"}},
        "spec": {},
        "status": {"allocatable": alloc},
    }


def resources(requests: dict[str, str]) -> dict[str, Any]:
    """Requests, with the limits the API server requires of an extended resource (it cannot be
    overcommitted, so its limit must be set and equal its request: pod validation)."""
    limits = {k: v for k, v in requests.items() if "/" in k and not k.startswith("hugepages-")}
    return {"requests": requests, "limits": limits} if limits else {"requests": requests}


def _pod(name: str, *, cpu_m: int, mem_mi: int, gpus: int = 0, node: str | None = None,
         priority_class: str, group: str | None = None, labels: dict[str, str] | None = None,
         start: str = "2026-12-01T00:00:00Z") -> dict[str, Any]:
    requests = {"cpu": f"{cpu_m}m", "memory": f"{mem_mi}Mi"}
    if gpus:
        requests[GPU] = str(gpus)
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
        "spec": {"priorityClassName": priority_class,
                 "containers": [{"name": "main", "image": "app", "resources": resources(requests)}]},
        "status": {"phase": "Pending"},
    }
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": start}
    if group is not None:
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    return pod


def _pod_group(name: str, *, min_count: int | None, priority_class: str, topology: str | None = None,
               parent: str | None = None, disruption_all: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else {"basic": {}},
        "priorityClassName": priority_class,
    }
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
        # the API server requires the Workload a child group was made from (validatePodGroup)
        spec["workloadRef"] = {"workloadName": parent, "templateName": name}
    if disruption_all:
        spec["disruptionMode"] = {"all": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def _composite_pod_group(name: str, *, min_groups: int, priority_class: str, topology: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
                     "priorityClassName": priority_class,
                     "schedulingConstraints": {"topology": [{"key": topology}]},
                     # the root of its own Workload, as the API server wants a group's Workload named
                     "workloadRef": {"workloadName": name, "templateName": name}}}


def generate(spec: GenerateSpec) -> list[dict[str, Any]]:
    rng = random.Random(spec.seed)
    objs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in PRIORITIES
    ]
    if spec.dra:
        objs += _dra_objects()
    nodes: list[tuple[str, str, bool]] = []  # (name, rack, gpu)
    per_zone = spec.blocks_per_zone * spec.racks_per_block * spec.nodes_per_rack
    for i in range(spec.nodes):
        z, rest = divmod(i, per_zone)
        b, rest = divmod(rest, spec.racks_per_block * spec.nodes_per_rack)
        r = rest // spec.nodes_per_rack
        rack = f"z{z}-b{b}-r{r}"
        first_in_rack = rest % spec.nodes_per_rack == 0
        gpu = rng.random() < spec.gpu_fraction if first_in_rack else nodes[-1][2]  # whole racks are GPU racks
        name = f"node-{i:05d}"
        nodes.append((name, rack, gpu))
        objs.append(_node(name, f"z{z}", f"z{z}-b{b}", rack, gpu, spec.dra))
        if gpu and spec.dra:
            objs.append(_slice(name))
    # background: per node, pods_per_node pods summing to ~utilisation of 64 cores
    by_rack: dict[str, list[tuple[str, bool]]] = {}
    for name, rack, gpu in nodes:
        by_rack.setdefault(rack, []).append((name, gpu))
    pod_id = 0
    group_id = 0
    apps = ("web", "cache", "etl", "notebook")
    for _, members in sorted(by_rack.items()):
        for name, gpu in members:
            budget = int(64000 * spec.utilisation)
            count = max(1, spec.pods_per_node + rng.randint(-2, 2))
            gpus_left = 8 if gpu else 0
            for k in range(count):
                cpu = budget // (count - k) if k < count - 1 else budget
                cpu = max(100, min(cpu, budget))
                budget -= cpu
                cls_name, _ = rng.choices(PRIORITIES[:3], weights=(5, 3, 1))[0]
                gpus = 1 if gpus_left and rng.random() < 0.5 else 0
                gpus_left -= gpus
                app = rng.choice(apps)
                pname = f"bg-{pod_id:06d}"
                bg = _pod(pname, cpu_m=cpu, mem_mi=cpu * 2, gpus=0 if spec.dra else gpus, node=name,
                          priority_class=cls_name, labels={"app": app},
                          start=f"2026-12-01T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z")
                if gpus and spec.dra:
                    _with_claim(bg, "gpu", claim=f"{pname}-gpu")
                    objs.append(_allocated_claim(f"{pname}-gpu", pname, name, [7 - gpus_left]))
                objs.append(bg)
                pod_id += 1
        # a few `all` groups spread over the rack's nodes
        groups = int(len(members) * spec.pods_per_node * spec.all_group_fraction / 4)
        for _ in range(groups):
            gname = f"svc-{group_id:05d}"
            group_id += 1
            objs.append(_pod_group(gname, min_count=4, priority_class="batch-low", disruption_all=True))
            for k in range(4):
                host, _ = members[rng.randrange(len(members))]
                objs.append(_pod(f"{gname}-{k}", cpu_m=500, mem_mi=1024, node=host, priority_class="batch-low",
                                 group=gname, labels={"app": "svc"}))
    for app in apps:
        objs.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                     "metadata": {"name": app, "namespace": NS},
                     "spec": {"selector": {"matchLabels": {"app": app}}, "maxUnavailable": 5},
                     "status": {"disruptionsAllowed": 5}})
    # the pending gang
    if spec.gang_pods:
        objs.append(_pod_group("train", min_count=spec.gang_pods, priority_class="training",
                               topology=spec.gang_topology))
        if spec.dra:
            objs.append(_claim_template("train-gpus", spec.gang_gpus))
        for k in range(spec.gang_pods):
            gang_pod = _pod(f"train-{k:04d}", cpu_m=spec.gang_cpu_m, mem_mi=spec.gang_cpu_m * 2,
                            gpus=0 if spec.dra else spec.gang_gpus, priority_class="training", group="train")
            if spec.dra and spec.gang_gpus:
                _with_claim(gang_pod, "gpu", template="train-gpus")
            objs.append(gang_pod)
    if spec.composite_groups:
        objs.append(_composite_pod_group("pipeline", min_groups=spec.composite_groups, priority_class="training",
                                         topology=ZONE))
        for g in range(spec.composite_groups):
            gname = f"pipeline-{g}"
            objs.append(_pod_group(gname, min_count=spec.composite_pods, priority_class="training",
                                   topology=RACK, parent="pipeline"))
            for k in range(spec.composite_pods):
                objs.append(_pod(f"{gname}-{k}", cpu_m=8000, mem_mi=16000, priority_class="training", group=gname))
    return objs


# --- shapes of upstream scheduler_perf's workload-aware cases ----------------------------------
# scheduler_perf's default node template: 4 cpu, 32Gi, 110 pods, one zone label; its pods
# request a little cpu and memory. The cases below keep those shapes; sizes are parameters.

def _perf_nodes(count: int, *, racks_of: int = 16, zones_of: int = 256) -> list[dict[str, Any]]:
    objs = []
    for i in range(count):
        name = f"node-{i:05d}"
        z, r = i // zones_of, i // racks_of
        objs.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {ZONE: f"z{z}", RACK: f"z{z}-r{r}", HOST: name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
        })
    return objs


def _priority_classes() -> list[dict[str, Any]]:
    return [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
            for n, v in PRIORITIES]


def gang_scheduling(*, nodes: int = 5000, gangs: int = 1000, size: int = 3) -> list[dict[str, Any]]:
    """scheduler_perf GangScheduling: empty nodes, ``gangs`` PodGroups of ``size`` pods (minCount = size)."""
    objs = _priority_classes() + _perf_nodes(nodes)
    for g in range(gangs):
        name = f"gang-{g:04d}"
        objs.append(_pod_group(name, min_count=size, priority_class="training"))
        objs.extend(_pod(f"{name}-{k}", cpu_m=1000, mem_mi=1024, priority_class="training", group=name)
                    for k in range(size))
    return objs


def podgroup_preemption(*, nodes: int = 1000, groups: int = 1000, group_size: int = 10, mode: str = "all",
                        preemptors: int = 100, seed: int = 0) -> list[dict[str, Any]]:
    """scheduler_perf PodGroup preemption: ``groups`` low-priority victim PodGroups of ``group_size``
    pods fill every node (group g runs one pod on each of nodes g .. g+group_size-1, mod nodes),
    disruptionMode ``all`` or ``single``; then a high-priority gang of ``preemptors`` pods of 2 cpu.
    Victims carry one of two low priorities, so which groups go matters to the cost tier."""
    if mode not in ("all", "single"):
        raise ValueError(f"mode must be 'all' or 'single', not {mode!r}")
    rng = random.Random(seed)
    objs = _priority_classes() + _perf_nodes(nodes)
    cpu_m = 4000 * nodes // (groups * group_size)  # the victims fill the cluster's cpu
    for g in range(groups):
        name = f"victims-{g:04d}"
        cls = rng.choice(("batch-low", "batch-mid"))
        objs.append(_pod_group(name, min_count=group_size, priority_class=cls, disruption_all=mode == "all"))
        for k in range(group_size):
            objs.append(_pod(f"{name}-{k}", cpu_m=cpu_m, mem_mi=256, node=f"node-{(g + k) % nodes:05d}",
                             priority_class=cls, group=name))
    objs.append(_pod_group("preemptor", min_count=preemptors, priority_class="serving-high"))
    objs.extend(_pod(f"preemptor-{k:03d}", cpu_m=2000, mem_mi=1024, priority_class="serving-high",
                     group="preemptor") for k in range(preemptors))
    return objs


def preemption_basic(*, nodes: int = 1000, init_pods: int = 4000, pods: int = 1000) -> list[dict[str, Any]]:
    """scheduler_perf PreemptionBasic (default_preemption/performance-config.yaml): 4-cpu nodes
    full of low-priority 900m pods (``init_pods`` of them, spread evenly as the scheduler
    spreads them), then ``pods`` alike high-priority pods of 3970m, each needing a whole node.
    The pending pods are standalone and alike: one pooled class (docs/design.md, "Scale")."""
    objs = _priority_classes() + _perf_nodes(nodes)
    objs.extend(_pod(f"pod-{k:05d}", cpu_m=900, mem_mi=500, node=f"node-{k % nodes:05d}", priority_class="batch-low")
                for k in range(init_pods))
    objs.extend(_pod(f"pod-high-priority-{k:05d}", cpu_m=3970, mem_mi=500, priority_class="serving-high")
                for k in range(pods))
    return objs


def contention(*, nodes: int = 5000, workloads: int = 200, demand: float = 1.3, seed: int = 0) -> list[dict[str, Any]]:
    """Many gangs competing for one busy cluster (issue 17's ``contention`` suite).

    The cluster is ``generate``'s: CPU racks of 16 nodes (64 cores each), 4 racks a block,
    4 blocks a zone, 70 % of the cpu held by a background of three priorities, some of it in
    ``disruptionMode: all`` groups, some under PDBs. Then ``workloads`` pending workloads, one
    in five a CompositePodGroup (block) of 2-4 PodGroups (rack) of 4-32 pods, the others
    PodGroups of 4-256 pods (rack up to 64 pods, block above), each at one of three
    priorities (batch-mid 100, training 1000, serving-high 10000), their gangs whole
    (minCount = size). Every pending pod asks the same cpu, set so that all of them together
    ask ``demand`` times what can fit: the free cpu plus the cpu of the background pods the
    strongest pending priority may preempt. They cannot all fit, so the plan chooses which
    workloads go and whom they evict.
    """
    spec = GenerateSpec(nodes=nodes, pods_per_node=10, utilisation=0.7, gpu_fraction=0.0, gang_pods=0, seed=seed)
    objs = generate(spec)
    rng = random.Random(seed + 1)
    # what can fit: the free cpu and the cpu of every background pod the strongest pending
    # priority may preempt (all but serving-high's)
    values = dict(PRIORITIES)
    held_m = sum(int(o["spec"]["containers"][0]["resources"]["requests"]["cpu"][:-1])
                 for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName")
                 and values[o["spec"]["priorityClassName"]] >= values["serving-high"])
    free_m = 64000 * nodes - held_m
    sizes = (4, 8, 16, 32, 64, 128, 256)
    priorities = ("batch-mid", "training", "serving-high")
    shapes: list[tuple[str, str, list[int]]] = []  # (kind, priority class, pods per PodGroup)
    for _ in range(workloads):
        cls = rng.choices(priorities, weights=(2, 2, 1))[0]
        if rng.random() < 0.2:
            shapes.append(("composite", cls, [rng.choice(sizes[:4]) for _ in range(rng.randint(2, 4))]))
        else:
            shapes.append(("podgroup", cls, [rng.choice(sizes)]))
    total_pods = sum(sum(groups) for _, _, groups in shapes)
    cpu_m = max(100, int(demand * free_m / total_pods) // 100 * 100)
    for w, (kind, cls, groups) in enumerate(shapes):
        name = f"job-{w:03d}"
        if kind == "podgroup":
            size = groups[0]
            objs.append(_pod_group(name, min_count=size, priority_class=cls, topology=RACK if size <= 64 else BLOCK))
            objs.extend(_pod(f"{name}-{k}", cpu_m=cpu_m, mem_mi=cpu_m // 4, priority_class=cls, group=name)
                        for k in range(size))
            continue
        objs.append(_composite_pod_group(name, min_groups=len(groups), priority_class=cls, topology=BLOCK))
        for g, size in enumerate(groups):
            gname = f"{name}-g{g}"
            objs.append(_pod_group(gname, min_count=size, priority_class=cls, topology=RACK, parent=name))
            objs.extend(_pod(f"{gname}-{k}", cpu_m=cpu_m, mem_mi=cpu_m // 4, priority_class=cls, group=gname)
                        for k in range(size))
    return objs
