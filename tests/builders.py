"""Chainable builders of Kubernetes objects (dicts as the API prints them).

Tests build real object dicts and run them through ``solver.kube`` so the
parser is exercised everywhere:

    node("n1").rack("r1").cpu_m(8000)
    pod("p1").on("n1").cpu_m(2000).priority(10)
    pod_group("pg", min_count=4).topology("topology.kubernetes.io/rack")
"""

from __future__ import annotations

import copy
from typing import Any

from solver import reading
from solver.reading import Reading
from solver.verify.read import Facts

RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"
NS = "default"


class _Builder:
    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj

    def build(self) -> dict[str, Any]:
        return copy.deepcopy(self.obj)

    def __repr__(self) -> str:
        meta, spec = self.obj["metadata"], self.obj.get("spec", {})
        extra = {k: v for k, v in spec.items() if k != "containers"}
        if "containers" in spec:
            extra["requests"] = spec["containers"][0]["resources"]["requests"]
        if self.obj["kind"] == "Node":
            extra["allocatable"] = self.obj["status"]["allocatable"]
        return f"{self.obj['kind']}({meta['name']}, labels={meta.get('labels', {})}, {extra})"

    def but(self, **changes: Any) -> _Builder:
        twin = copy.deepcopy(self)
        for name, value in changes.items():
            getattr(twin, name)(*value) if isinstance(value, tuple) else getattr(twin, name)(value)
        return twin

    def label(self, key: str, value: str) -> _Builder:
        self.obj["metadata"].setdefault("labels", {})[key] = value
        return self

    def worth(self, value: int) -> _Builder:
        """A workload's value in the plan's first tier (gangplace.io/value), on its root."""
        self.obj["metadata"].setdefault("annotations", {})["gangplace.io/value"] = str(value)
        return self


class NodeBuilder(_Builder):
    def rack(self, rack: str) -> NodeBuilder:
        self.label(RACK, rack)
        return self

    def zone(self, zone: str) -> NodeBuilder:
        self.label(ZONE, zone)
        return self

    def cpu_m(self, milli: int) -> NodeBuilder:
        self.obj["status"]["allocatable"]["cpu"] = f"{milli}m"
        return self

    def memory_mi(self, mib: int) -> NodeBuilder:
        self.obj["status"]["allocatable"]["memory"] = f"{mib}Mi"
        return self

    def pods(self, n: int) -> NodeBuilder:
        self.obj["status"]["allocatable"]["pods"] = str(n)
        return self

    def gpus(self, n: int, name: str = "example.com/gpu") -> NodeBuilder:
        self.obj["status"]["allocatable"][name] = str(n)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        self.obj["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self) -> NodeBuilder:
        self.obj["spec"]["unschedulable"] = True
        return self


def node(name: str) -> NodeBuilder:
    return NodeBuilder({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    })


class PodBuilder(_Builder):
    def _requests(self) -> dict[str, Any]:
        return self.obj["spec"]["containers"][0]["resources"]["requests"]

    def on(self, node_name: str) -> PodBuilder:
        self.obj["spec"]["nodeName"] = node_name
        self.obj["status"] = {"phase": "Running", "startTime": "2026-12-01T00:00:00Z"}
        return self

    def started(self, ts: str) -> PodBuilder:
        self.obj["status"]["startTime"] = ts
        return self

    def cpu_m(self, milli: int) -> PodBuilder:
        self._requests()["cpu"] = f"{milli}m"
        return self

    def memory_mi(self, mib: int) -> PodBuilder:
        self._requests()["memory"] = f"{mib}Mi"
        return self

    def request(self, resource: str, amount: str) -> PodBuilder:
        self._requests()[resource] = amount
        return self

    def priority(self, value: int) -> PodBuilder:
        self.obj["spec"]["priority"] = value
        return self

    def never_preempt(self) -> PodBuilder:
        self.obj["spec"]["preemptionPolicy"] = "Never"
        return self

    def group(self, name: str) -> PodBuilder:
        self.obj["spec"]["schedulingGroup"] = {"podGroupName": name}
        return self

    def selector(self, key: str, value: str) -> PodBuilder:
        self.obj["spec"].setdefault("nodeSelector", {})[key] = value
        return self

    def affinity(self, key: str, operator: str, *values: str) -> PodBuilder:
        terms = (self.obj["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
                 .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
                 .setdefault("nodeSelectorTerms", [{"matchExpressions": []}]))
        terms[0]["matchExpressions"].append({"key": key, "operator": operator, "values": list(values)})
        return self

    def tolerate(self, key: str, value: str = "", effect: str = "", operator: str = "Equal") -> PodBuilder:
        self.obj["spec"].setdefault("tolerations", []).append(
            {"key": key, "operator": operator, "value": value, "effect": effect})
        return self

    def cost(self, value: str) -> PodBuilder:
        self.obj["metadata"].setdefault("annotations", {})["gangplace.io/preemption-cost"] = value
        return self


def pod(name: str) -> PodBuilder:
    return PodBuilder({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Pending"},
    })


class GroupBuilder(_Builder):
    def topology(self, key: str) -> GroupBuilder:
        self.obj["spec"].setdefault("schedulingConstraints", {}).setdefault("topology", []).append({"key": key})
        return self

    def parent(self, name: str) -> GroupBuilder:
        self.obj["spec"]["parentCompositePodGroupName"] = name
        return self

    def disruption_all(self) -> GroupBuilder:
        self.obj["spec"]["disruptionMode"] = {"all": {}}
        return self

    def priority(self, value: int) -> GroupBuilder:
        self.obj["spec"]["priority"] = value
        return self

    def never_preempt(self) -> GroupBuilder:
        self.obj["spec"]["preemptionPolicy"] = "Never"
        return self


def pod_group(name: str, min_count: int | None = None) -> GroupBuilder:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return GroupBuilder({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulingPolicy": policy},
    })


def composite(name: str, min_group_count: int | None = None) -> GroupBuilder:
    policy = {"gang": {"minGroupCount": min_group_count}} if min_group_count is not None else {"basic": {}}
    return GroupBuilder({
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulingPolicy": policy},
    })


def pdb(name: str, allowed: int, **match_labels: str) -> _Builder:
    """A budget as the disruption controller leaves it: its status observed at its generation
    (the Eviction API refuses while it is not)."""
    return _Builder({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NS, "generation": 1},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": 1},
    })


def priority_class(name: str, value: int, global_default: bool = False) -> _Builder:
    return _Builder({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value, "globalDefault": global_default,
    })


def admitted(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pod in a group that sets no ``spec.priority`` gets its root group's, as on a cluster where
    the pods and the group name one PriorityClass (upstream refuses a group whose pods differ:
    validatePodGroup). A test of that rule sets the pod's priority itself."""
    groups = {(o["metadata"].get("namespace", NS), o["metadata"]["name"]): o for o in objects
              if o.get("kind") in ("PodGroup", "CompositePodGroup")}

    def root_priority(ns: str, name: str) -> Any:
        seen = set()
        while (ns, name) in groups and (ns, name) not in seen:
            seen.add((ns, name))
            spec = groups[ns, name]["spec"]
            if spec.get("parentCompositePodGroupName"):
                name = spec["parentCompositePodGroupName"]
                continue
            return spec.get("priority")
        return None

    for o in objects:
        spec = o.get("spec", {}) if o.get("kind") == "Pod" else {}
        group = spec.get("schedulingGroup", {}).get("podGroupName")
        if group and "priority" not in spec and "priorityClassName" not in spec:
            prio = root_priority(o["metadata"].get("namespace", NS), group)
            if prio is not None:
                spec["priority"] = prio
    return objects


def snapshot(*objects: Any) -> Reading:
    """Objects or builders -> the snapshot through the real parser (pods ``admitted``), with the
    verifier's facts from the same objects (``solver.reading``)."""
    return reading.read(admitted([o.build() if isinstance(o, _Builder) else o for o in objects]))


def facts_and(reading: Reading) -> tuple[Facts, Reading]:
    """A reading's facts and the reading itself: ``verify.verify``'s first two arguments."""
    return reading.facts, reading


def ours(builder: Any) -> dict[str, Any]:
    """A pod for the gangplace adapter (schedulerName gangplace)."""
    obj = builder.build()
    obj["spec"]["schedulerName"] = "gangplace"
    return obj


def gang_scenario(put: Any, *, gang: int = 2, cpu: int = 2000) -> None:
    """The adapter's end-to-end cluster, written through ``put`` (the double or a real API server).
    Rack r0: n0, n1 (4 cpu each) with low-priority pods labelled app=batch; rack r1: n2 full of
    a high-priority pod. Two 2-cpu gang pods fit in r0 only, and only by evicting low-b (n1 then
    holds both)."""
    for name, rack in (("n0", "r0"), ("n1", "r0"), ("n2", "r1")):
        put(node(name).rack(rack).cpu_m(4000).build())
    put(pod("low-a").on("n0").cpu_m(3000).priority(1).label("app", "batch").build())
    put(pod("low-b").on("n1").cpu_m(3000).priority(1).label("app", "batch").build())
    put(pod("keep").on("n0").cpu_m(500).priority(1000).build())
    put(pod("vip").on("n2").cpu_m(3500).priority(1000).build())
    put(pod_group("train", gang).topology(RACK).priority(100).build())
    for k in range(gang):
        put(ours(pod(f"train-{k}").group("train").priority(100).cpu_m(cpu)))
