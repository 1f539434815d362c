"""PodGroups and CompositePodGroups (the workload tree) and PodDisruptionBudgets."""

from __future__ import annotations

from collections.abc import Mapping

from solver.core import snapshot as s
from solver.kube.objects import MAX_DEPTH, Obj, get_field, ident_of, invalid, label_selector, name_of, workload_value
from solver.kube.pods import Priorities, positive_int32

# ---- groups ----------------------------------------------------------------------


def parse_group(obj: Obj, priorities: Priorities) -> tuple[s.Group, int | None]:
    """A PodGroup or CompositePodGroup, and its own priority (None: inherit the parent's)."""
    ns, name = name_of(obj, namespaced=True)
    kind = obj["kind"]
    policy = get_field(obj, "spec.schedulingPolicy", Mapping)
    if policy is None:
        raise invalid(obj, "spec.schedulingPolicy", "missing")
    has_gang, has_basic = policy.get("gang") is not None, policy.get("basic") is not None
    if has_gang == has_basic:
        raise invalid(obj, "spec.schedulingPolicy", "exactly one of basic and gang must be set")
    min_count = None
    if has_gang:
        field = "minCount" if kind == "PodGroup" else "minGroupCount"
        min_count = positive_int32(obj, f"spec.schedulingPolicy.gang.{field}",
                                    get_field(obj, f"spec.schedulingPolicy.gang.{field}", int))
    topology = get_field(obj, "spec.schedulingConstraints.topology", list, [])
    if len(topology) > 1:
        raise invalid(obj, "spec.schedulingConstraints.topology", "at most one topology constraint per group")
    topology_key = None
    if topology:
        topology_key = topology[0].get("key") if isinstance(topology[0], Mapping) else None
        if not isinstance(topology_key, str) or not topology_key:
            raise invalid(obj, "spec.schedulingConstraints.topology[0].key", "missing")
    mode = get_field(obj, "spec.disruptionMode", Mapping, {})
    if mode.get("all") is not None and mode.get("single") is not None:
        raise invalid(obj, "spec.disruptionMode", "at most one of all and single")
    prio, preemption = priorities.resolve(obj, "spec")
    parent = get_field(obj, "spec.parentCompositePodGroupName", str)
    value = workload_value(obj, f"the group is under CompositePodGroup {parent}: a workload's value is read on "
                                "its root" if parent else "")
    group = s.Group(
        key=s.group_key(kind, ns, name),
        kind=kind,
        parent=s.group_key(s.COMPOSITE_POD_GROUP, ns, parent) if parent else None,
        min_count=min_count,
        topology_key=topology_key,
        disruption_all=mode.get("all") is not None,
        priority=prio or 0,
        preemption_policy=preemption,
        value=value,
    )
    return group, prio


def resolve_tree(groups: dict[s.GroupKey, tuple[s.Group, int | None, Obj]]
                  ) -> tuple[tuple[s.Group, ...], dict[s.GroupKey, str]]:
    """Validate parents, cycles and depth; a group without a priority inherits its parent's.

    A group whose parent CompositePodGroup does not exist (yet), and every group under it, is
    incomplete: it is returned apart, group -> why, and left out of the tree (upstream holds its
    pods until the parent appears). A PodGroup of the parent's name is not its parent.
    """
    incomplete: dict[s.GroupKey, str] = {}
    for group, _, obj in groups.values():
        if group.parent is None:
            continue
        parent = groups.get(group.parent)
        if parent is None:
            incomplete[group.key] = (f"{group.parent} not found: waiting for the parent of "
                                     f"{ident_of(obj)} to appear")
    resolved: dict[s.GroupKey, s.Group] = {}
    for key in sorted(groups):
        if key in incomplete:
            continue
        chain = [key]
        while (up := groups[chain[-1]][0].parent) is not None:
            if up in chain:
                raise invalid(groups[key][2], "spec.parentCompositePodGroupName",
                            f"cycle of parents: {' -> '.join([*chain, up])}")
            chain.append(up)
            if up in incomplete:
                break
        if chain[-1] in incomplete:
            incomplete[key] = incomplete[chain[-1]]
            continue
        if len(chain) > MAX_DEPTH:
            raise invalid(groups[key][2], "spec.parentCompositePodGroupName",
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
    ns, name = name_of(obj, namespaced=True)
    raw = get_field(obj, "spec.selector", Mapping)
    if raw is None:
        return None
    allowed = get_field(obj, "status.disruptionsAllowed", int, 0)
    policy = get_field(obj, "spec.unhealthyPodEvictionPolicy", str) or "IfHealthyBudget"
    if policy not in UNHEALTHY_POLICIES:
        raise invalid(obj, "spec.unhealthyPodEvictionPolicy",
                    f"must be one of {', '.join(UNHEALTHY_POLICIES)}, got {policy!r}")
    return s.PodDisruptionBudget(
        key=s.PdbKey(f"{ns}/{name}"), namespace=ns,
        selector=label_selector(obj, "spec.selector", raw),
        disruptions_allowed=allowed,
        generation=get_field(obj, "metadata.generation", int, 0),
        observed_generation=get_field(obj, "status.observedGeneration", int, 0),
        unhealthy_policy=policy,
        current_healthy=get_field(obj, "status.currentHealthy", int, 0),
        desired_healthy=get_field(obj, "status.desiredHealthy", int, 0),
    )


UNHEALTHY_POLICIES = ("IfHealthyBudget", "AlwaysAllow")  # policy/v1 UnhealthyPodEvictionPolicyType
