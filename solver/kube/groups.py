"""PodGroups and CompositePodGroups (the workload tree) and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Mapping

from solver.kube.objects import MAX_DEPTH, Obj, _fail, _get, _label_selector, _meta, workload_value
from solver.kube.pods import _positive_int32, _Priorities
from solver.model import snapshot as s

# ---- groups ----------------------------------------------------------------------


def parse_group(obj: Obj, priorities: _Priorities) -> tuple[s.Group, int | None]:
    """A PodGroup or CompositePodGroup, and its own priority (None: inherit the parent's)."""
    ns, name = _meta(obj, namespaced=True)
    kind = obj["kind"]
    policy = _get(obj, "spec.schedulingPolicy", Mapping)
    if policy is None:
        raise _fail(obj, "spec.schedulingPolicy", "missing")
    has_gang, has_basic = policy.get("gang") is not None, policy.get("basic") is not None
    if has_gang == has_basic:
        raise _fail(obj, "spec.schedulingPolicy", "exactly one of basic and gang must be set")
    min_count = None
    if has_gang:
        field = "minCount" if kind == "PodGroup" else "minGroupCount"
        min_count = _positive_int32(obj, f"spec.schedulingPolicy.gang.{field}",
                                    _get(obj, f"spec.schedulingPolicy.gang.{field}", int))
    topology = _get(obj, "spec.schedulingConstraints.topology", list, [])
    if len(topology) > 1:
        raise _fail(obj, "spec.schedulingConstraints.topology", "at most one topology constraint per group")
    topology_key = None
    if topology:
        topology_key = topology[0].get("key") if isinstance(topology[0], Mapping) else None
        if not isinstance(topology_key, str) or not topology_key:
            raise _fail(obj, "spec.schedulingConstraints.topology[0].key", "missing")
    mode = _get(obj, "spec.disruptionMode", Mapping, {})
    if mode.get("all") is not None and mode.get("single") is not None:
        raise _fail(obj, "spec.disruptionMode", "at most one of all and single")
    prio, preemption = priorities.resolve(obj, "spec")
    parent = _get(obj, "spec.parentCompositePodGroupName", str)
    value = workload_value(obj, f"the group is under CompositePodGroup {parent}: a workload's value is read on "
                                "its root" if parent else "")
    group = s.Group(
        key=s.GroupKey(f"{ns}/{name}"),
        kind=kind,
        parent=s.GroupKey(f"{ns}/{parent}") if parent else None,
        min_count=min_count,
        topology_key=topology_key,
        disruption_all=mode.get("all") is not None,
        priority=prio or 0,
        preemption_policy=preemption,
        value=value,
    )
    return group, prio


def _resolve_tree(groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]]
                  ) -> tuple[tuple[s.Group, ...], dict[s.GroupKey, str]]:
    """Validate parents, cycles and depth; a group without a priority inherits its parent's.

    A group whose parent CompositePodGroup does not exist (yet), and every group under it, is
    incomplete: it is returned apart, group -> why, and left out of the tree (upstream holds its
    pods until the parent appears). A parent that exists but is a PodGroup is malformed.
    """
    incomplete: dict[s.GroupKey, str] = {}
    for group, _, obj in groups.values():
        if group.parent is None:
            continue
        parent = groups.get(group.parent)
        if parent is None:
            incomplete[group.key] = (f"CompositePodGroup {group.parent} not found: waiting for the "
                                     f"parent of PodGroup {group.key} to appear")
        elif parent[0].kind != "CompositePodGroup":
            raise _fail(obj, "spec.parentCompositePodGroupName",
                        f"{group.parent} is a PodGroup, not a CompositePodGroup")
    resolved: dict[s.GroupKey, s.Group] = {}
    for key in sorted(groups):
        if key in incomplete:
            continue
        chain = [key]
        while (up := groups[chain[-1]][0].parent) is not None:
            if up in chain:
                raise _fail(groups[key][2], "spec.parentCompositePodGroupName",
                            f"cycle of parents: {' -> '.join([*chain, up])}")
            chain.append(up)
            if up in incomplete:
                break
        if chain[-1] in incomplete:
            incomplete[key] = incomplete[chain[-1]]
            continue
        if len(chain) > MAX_DEPTH:
            raise _fail(groups[key][2], "spec.parentCompositePodGroupName",
                        f"workload tree deeper than {MAX_DEPTH}: {' -> '.join(chain)}")
        priority = next((p for g in chain if (p := groups[g][1]) is not None), 0)
        group = groups[key][0]
        resolved[key] = s.Group(
            key=group.key, kind=group.kind, parent=group.parent, min_count=group.min_count,
            topology_key=group.topology_key, disruption_all=group.disruption_all,
            priority=priority, preemption_policy=group.preemption_policy, value=group.value,
        )
    return tuple(resolved[k] for k in sorted(resolved)), incomplete


# ---- PDBs ------------------------------------------------------------------------


def parse_pdb(obj: Obj) -> s.PodDisruptionBudget | None:
    """None for a budget without a selector: policy/v1 says it selects no pods."""
    ns, name = _meta(obj, namespaced=True)
    raw = _get(obj, "spec.selector", Mapping)
    if raw is None:
        return None
    allowed = _get(obj, "status.disruptionsAllowed", int, 0)
    policy = _get(obj, "spec.unhealthyPodEvictionPolicy", str) or "IfHealthyBudget"
    if policy not in UNHEALTHY_POLICIES:
        raise _fail(obj, "spec.unhealthyPodEvictionPolicy",
                    f"must be one of {', '.join(UNHEALTHY_POLICIES)}, got {policy!r}")
    return s.PodDisruptionBudget(
        key=s.PdbKey(f"{ns}/{name}"), namespace=ns,
        selector=_label_selector(obj, "spec.selector", raw),
        disruptions_allowed=allowed,
        generation=_get(obj, "metadata.generation", int, 0),
        observed_generation=_get(obj, "status.observedGeneration", int, 0),
        unhealthy_policy=policy,
        current_healthy=_get(obj, "status.currentHealthy", int, 0),
        desired_healthy=_get(obj, "status.desiredHealthy", int, 0),
    )


UNHEALTHY_POLICIES = ("IfHealthyBudget", "AlwaysAllow")  # policy/v1 UnhealthyPodEvictionPolicyType
