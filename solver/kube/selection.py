"""Which pending pods a scheduler named ``scheduler_name`` plans, as the adapter does it:
its own pods only (``spec.schedulerName``), and of a PodGroup tree only once the tree is
complete and holds as many pods as its gangs need (kube-scheduler's PodGroup pre-enqueue
check waits the same way). Everything else the solver reads passes unchanged.

One function for ``gangplace solve --scheduler-name`` and ``gangplace adapter``, so a
captured cluster gives the plan the adapter would make. It reads Kubernetes object dicts, at
the edge with ``solver.kube``; the core never sees it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from solver.core.snapshot import COMPOSITE_POD_GROUP, GroupKey, WorkloadTree, group_key

Obj = dict[str, Any]
GROUP_KINDS = ("PodGroup", "CompositePodGroup")


def key(obj: Obj) -> str:
    """A pod's "namespace/name"; a group's key (``group_key``: a CompositePodGroup's carries
    its kind)."""
    m = obj["metadata"]
    if obj.get("kind") in GROUP_KINDS:
        return group_key(str(obj["kind"]), m.get("namespace", ""), m["name"])
    return f"{m.get('namespace', '')}/{m['name']}"


def pending(pod: Obj) -> bool:
    """Not bound and not finished."""
    return not pod.get("spec", {}).get("nodeName") and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed")


def _parent(group: Obj) -> GroupKey | None:
    spec = group.get("spec")
    parent = spec.get("parentCompositePodGroupName") if isinstance(spec, dict) else None
    return group_key(COMPOSITE_POD_GROUP, group.get("metadata", {}).get("namespace", ""), parent) if parent else None


def tree_of(groups: Mapping[str, Obj]) -> WorkloadTree:
    """The workload tree of PodGroup and CompositePodGroup objects, by their keys."""
    return WorkloadTree({GroupKey(k): _parent(g) for k, g in groups.items()})


def groups_of(objects: Iterable[Obj]) -> dict[str, Obj]:
    return {key(o): o for o in objects if o.get("kind") in GROUP_KINDS and isinstance(o.get("metadata"), dict)}


@dataclass(frozen=True, slots=True)
class Selection:
    objects: list[Obj]  # what the solver reads
    ready: list[str]  # roots planned
    waiting: dict[str, str]  # root -> why it is not attempted yet
    held: dict[str, str] = field(default_factory=dict)  # pending pod "ns/name" -> why it is not attempted yet


def select(objects: Iterable[Obj], scheduler_name: str) -> Selection:
    objs = list(objects)
    groups = groups_of(objs)
    tree = tree_of(groups)
    members: dict[str, int] = {}
    for o in objs:
        if o["kind"] == "Pod" and (g := o.get("spec", {}).get("schedulingGroup", {}).get("podGroupName")):
            k = f"{o['metadata'].get('namespace', '')}/{g}"
            members[k] = members.get(k, 0) + 1

    def root_of(k: str) -> str | None:
        """The root of ``k``'s tree; None while the tree is incomplete (a parent not created
        yet) or loops."""
        if k not in tree:
            return None
        top = tree.root(GroupKey(k))
        return top if _parent(groups[top]) is None else None

    def ready(k: str) -> bool:
        g = groups[k]
        gang = g.get("spec", {}).get("schedulingPolicy", {}).get("gang") or {}
        if g["kind"] == "PodGroup":
            return members.get(k, 0) >= (gang.get("minCount") or 1)
        return sum(ready(c) for c in tree.children(GroupKey(k))) >= (gang.get("minGroupCount") or 1)

    out, planned, waiting, held = [], set(), {}, {}
    for o in objs:
        if o["kind"] != "Pod" or not pending(o):
            out.append(o)
            continue
        if o.get("spec", {}).get("schedulerName", "default-scheduler") != scheduler_name:
            continue  # another scheduler's pending pod: not ours to place
        g = o.get("spec", {}).get("schedulingGroup", {}).get("podGroupName")
        if not g:
            out.append(o)
            planned.add(key(o))
            continue
        k = f"{o['metadata'].get('namespace', '')}/{g}"
        root = root_of(k)
        if root is None:
            waiting[k] = held[key(o)] = (f"PodGroup {k} not found: waiting for it to be created" if k not in tree
                                         else f"the PodGroup tree of {k} is not complete yet")
            continue
        if not ready(root):
            waiting[root] = held[key(o)] = "fewer pods observed than its gang needs"
            continue
        out.append(o)
        planned.add(root)
    return Selection(objects=out, ready=sorted(planned), waiting=waiting, held=held)
