"""The core rules: bindings, admission, inter-pod rules, evictions, capacity, victims, gangs,
topology, PDBs and the objective. One ``check_*`` function per rule."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from solver.core import snapshot as s
from solver.verify import read
from solver.verify.dra import needed_for_devices
from solver.verify.view import POD_ROOT, View
from solver.verify.violation import Violation


def check_bindings(view: View) -> list[Violation]:
    out = []
    seen: set[str] = set()
    for b in view.plan.bindings:
        pod = view.pods.get(s.PodKey(b.pod))
        node = view.node_facts.get(b.node)
        if b.pod in seen:
            out.append(Violation(rule="binding", subject=b.pod, detail="bound twice"))
        seen.add(b.pod)
        if pod is None or node is None:
            out.append(Violation(rule="binding", subject=b.pod, detail=f"unknown pod or node {b.node}"))
            continue
        if pod.node is not None:
            out.append(Violation(rule="binding", subject=b.pod, detail="pod is already running"))
        if pod.scheduling_gates:
            out.append(Violation(rule="binding", subject=b.pod, detail=f"gated by {list(pod.scheduling_gates)}"))
        if pod.terminating:
            out.append(Violation(rule="binding", subject=b.pod, detail="pod is being deleted"))
        why = read.refusal(view.spec(pod), node)
        if why:
            out.append(Violation(rule="binding", subject=b.pod, detail=f"node {b.node} refuses it: {why}"))
    return out


def check_admission(view: View) -> list[Violation]:
    """No pod of a workload that upstream's validatePodGroup refuses is bound."""
    out = []
    for root in sorted(view.planned_roots()):
        if s.GroupKey(root) not in view.groups or not view.refused(root):
            continue
        bound = sorted(p.key for p in view.subtree_pods(root) if p.key in view.bound)
        if bound:
            out.append(Violation(rule="admission", subject=root,
                                 detail=f"validatePodGroup refuses the workload, yet {bound} are bound"))
    return out


# ---- inter-pod rules ----------------------------------------------------------------
# Read on the plan's end state: the running pods not evicted and the pods it binds, each on
# its node ("present"). Running pods are never checked against each other (upstream filters
# only the pod being placed).


def _where_now(view: View, pod: s.Pod) -> read.NodeFacts | None:
    name = view.bound.get(pod.key) or pod.node
    return view.node_facts.get(name) if name else None


def _ns(view: View, pod: s.Pod) -> Mapping[str, str]:
    return view.facts.namespace_labels(pod.namespace)


def _selects(view: View, term: read.PodTerm, pod: s.Pod) -> bool:
    return read.term_selects(term, pod.namespace, view.labels(pod), _ns(view, pod))


def _same_domain(key: str, a: read.NodeFacts | None, b: read.NodeFacts | None) -> bool:
    return a is not None and b is not None and key in a.labels and a.labels[key] == b.labels.get(key)


def _anti_conflict(view: View, owner: s.Pod, other: s.Pod) -> bool:
    """``owner``'s required anti-affinity refuses ``other`` where they now are."""
    terms = view.spec(owner).anti_affinity
    if owner.key == other.key or not terms:
        return False
    a, b = _where_now(view, owner), _where_now(view, other)
    return any(_same_domain(t.topology_key, a, b) and _selects(view, t, other) for t in terms)


def _port_conflict(view: View, a: s.Pod, b: s.Pod) -> bool:
    """One host port asked for by two pods on one node (NodePorts)."""
    return _on_one_node(view, a, b, view.spec(a).host_ports, view.spec(b).host_ports, read.ports_clash)


def _disk_conflict(view: View, a: s.Pod, b: s.Pod) -> bool:
    """One inline disk two pods on one node may not share (VolumeRestrictions)."""
    return _on_one_node(view, a, b, view.spec(a).disks, view.spec(b).disks, read.disks_conflict)


def _on_one_node(view: View, a: s.Pod, b: s.Pod, mine: Sequence[Any], theirs: Sequence[Any],
                 clash: Callable[[Any, Any], bool]) -> bool:
    """Two pods on one node, one thing of each clashing."""
    if a.key == b.key or not mine or not theirs:
        return False
    na, nb = _where_now(view, a), _where_now(view, b)
    return na is not None and nb is not None and na.name == nb.name and any(clash(x, y) for x in mine for y in theirs)


def _in_conflict(view: View, a: s.Pod, b: s.Pod) -> bool:
    return (_anti_conflict(view, a, b) or _anti_conflict(view, b, a) or _port_conflict(view, a, b)
            or _disk_conflict(view, a, b))


def check_pod_anti_affinity(view: View) -> list[Violation]:
    """InterPodAffinity (plugins/interpodaffinity/filtering.go): no bound pod's anti-affinity
    term matches another present pod in its domain (satisfyPodAntiAffinity), and no present
    pod's term matches a bound pod in its (satisfyExistingPodsAntiAffinity)."""
    out: list[Violation] = []
    present = view.present()
    owners = [q for q in present if view.spec(q).anti_affinity]
    by_domain: dict[tuple[str, str], list[s.Pod]] = {}  # (key, value) -> present pods there
    for key in {t.topology_key for p in view.new_pods for t in view.spec(p).anti_affinity}:
        for q in present:
            node = _where_now(view, q)
            if node is not None and key in node.labels:
                by_domain.setdefault((key, node.labels[key]), []).append(q)
    for p in view.new_pods:
        out.extend(Violation(rule="pod-anti-affinity", subject=p.key,
                             detail=f"refused by {q.key}'s required anti-affinity in its domain")
                   for q in owners if _anti_conflict(view, q, p))
        node = _where_now(view, p)
        near = {q.key: q for t in view.spec(p).anti_affinity if node is not None and t.topology_key in node.labels
                for q in by_domain.get((t.topology_key, node.labels[t.topology_key]), ())}
        out.extend(Violation(rule="pod-anti-affinity", subject=p.key,
                             detail=f"its required anti-affinity refuses {q.key} in its domain")
                   for q in near.values() if _anti_conflict(view, p, q))
    return out


def _spread_eligible(view: View, c: read.Spread, owner: s.Pod, node: read.NodeFacts) -> bool:
    """The node is one of the constraint's domains for ``owner``: it has the key of every one of
    the owner's constraints (nodeLabelsMatchSpreadConstraints), and passes the owner's node
    affinity (nodeAffinityPolicy Honor) and taints (nodeTaintsPolicy Honor)."""
    spec = view.spec(owner)
    if any(x.topology_key not in node.labels for x in spec.spread):
        return False
    if c.honor_affinity and not read.affinity_holds(spec, node):
        return False
    return not c.honor_taints or read.taints_tolerated(spec, node)


def _spread_matches(view: View, c: read.Spread, owner: s.Pod, pod: s.Pod) -> bool:
    """``pod`` counts toward ``owner``'s constraint: same namespace, not terminating, selected
    (countPodsMatchSelector, plugins/podtopologyspread/common.go)."""
    return c.selector is not None and pod.namespace == owner.namespace and not pod.terminating \
        and c.selector.matches(view.labels(pod))


def _spread_counts(view: View, c: read.Spread, owner: s.Pod, also: Iterable[s.Pod] = ()
                   ) -> tuple[dict[str, int], int, set[str]]:
    """(matching pods per eligible domain of ``owner``'s constraint, the fewest: 0 below
    minDomains, the eligible nodes) on the end state, with ``also`` (evicted pods put back)
    counted too."""
    eligible = {n.name: n for n in view.node_facts.values() if _spread_eligible(view, c, owner, n)}
    counts = {n.labels[c.topology_key]: 0 for n in eligible.values()}
    for q in [p for p in view.present() if not p.terminating] + list(also):
        where = _where_now(view, q)
        if where is not None and where.name in eligible and _spread_matches(view, c, owner, q):
            counts[where.labels[c.topology_key]] += 1
    low = 0 if len(counts) < c.min_domains else min(counts.values(), default=0)
    return counts, low, set(eligible)


def _needed_for_once(view: View, members: list[s.Pod], prio: int) -> bool:
    """A new pod that may preempt the unit is bound on the node of a member that uses a
    ReadWriteOncePod claim it uses: put back, the member would hold the claim again
    (VolumeRestrictions' dry run lifts the conflict by removing the holder from its node)."""
    held = {(claim, p.node) for p in members if p.node for claim in view.facts.once_pod.get(p.key, ())}
    return any((claim, node.name) in held for p in view.new_pods if view.power(p) > prio
               and (node := _where_now(view, p)) is not None for claim in view.facts.once_pod.get(p.key, ()))


def _needed_for_spread(view: View, members: list[s.Pod], prio: int) -> bool:
    """Put back, the victim would push a bound pod's domain past maxSkew, and that pod may
    preempt it (upstream's reprieve keeps only victims whose return passes every filter)."""
    for p in view.new_pods:
        if not view.spec(p).spread or view.power(p) <= prio:
            continue
        node = _where_now(view, p)
        for c in view.spec(p).spread:
            if node is None or not any(_spread_matches(view, c, p, q) for q in members):
                continue
            counts, low, _ = _spread_counts(view, c, p, members)
            value = node.labels.get(c.topology_key)
            if value in counts and counts[value] - low > c.max_skew:
                return True
    return False


def check_host_ports(view: View) -> list[Violation]:
    """NodePorts: no bound pod asks for a host port another present pod on its node holds."""
    out: list[Violation] = []
    on_node: dict[str, list[s.Pod]] = defaultdict(list)
    for q in view.present():
        if view.spec(q).host_ports and (node := _where_now(view, q)) is not None:
            on_node[node.name].append(q)
    for p in view.new_pods:
        node = _where_now(view, p)
        if not view.spec(p).host_ports or node is None:
            continue
        out.extend(Violation(rule="host-port", subject=p.key, detail=f"a host port of {q.key} on {node.name}")
                   for q in on_node.get(node.name, ()) if _port_conflict(view, p, q))
    return out


def check_volume_restrictions(view: View) -> list[Violation]:
    """VolumeRestrictions: no bound pod's inline disk conflicts with one of another present pod
    on its node (satisfyVolumeConflicts), and a bound pod's ReadWriteOncePod claim is used by no
    other pod present at the end (satisfyReadWriteOncePod)."""
    disks: dict[str, list[s.Pod]] = defaultdict(list)
    for q in view.present():
        if view.spec(q).disks and (node := _where_now(view, q)) is not None:
            disks[node.name].append(q)
    out = [Violation(rule="volume-restrictions", subject=p.key, detail=f"an inline disk of {q.key} on {node.name}")
           for p in view.new_pods if view.spec(p).disks and (node := _where_now(view, p)) is not None
           for q in disks.get(node.name, ()) if _disk_conflict(view, p, q)]
    users: dict[str, list[str]] = defaultdict(list)
    for q in view.present():
        for claim in view.facts.once_pod.get(q.key, ()):
            users[claim].append(q.key)
    out += [Violation(rule="volume-restrictions", subject=p.key,
                      detail=f"ReadWriteOncePod claim {claim} is also used by {sorted(set(users[claim]) - {p.key})}")
            for p in view.new_pods for claim in view.facts.once_pod.get(p.key, ()) if len(set(users[claim])) > 1]
    return out


def check_static_volumes(view: View) -> list[Violation]:
    """VolumeBinding (findMatchingVolumes, with each binding assumed as pods are scheduled):
    the bound pods' claims that only an available volume serves each get a volume of their own:
    of their class, access modes and size, not claimed by another claim, matching by node
    affinity the node of every bound pod naming the claim (a claim binds once: two pods sharing
    it share its volume); a bipartite matching over every such claim."""
    users: dict[str, list[s.Pod]] = defaultdict(list)
    claims: dict[str, read.StaticClaim] = {}
    for p in view.new_pods:
        for c in view.facts.static_claims.get(p.key, ()):
            users[c.key].append(p)
            claims[c.key] = c
    asks = sorted(claims)
    if not asks:
        return []
    volumes = view.facts.static_volumes
    nodes = view.facts.nodes

    def serves(v: read.StaticVolume, c: read.StaticClaim) -> bool:
        where = [nodes.get(view.bound[p.key]) for p in users[c.key]]
        return all(node is not None for node in where) and read.volume_takes(v.obj, c.obj, v.room, c.want) and (
            not v.terms or all(any(read.term_holds(t, node) for t in v.terms) for node in where if node))

    owner: dict[str, int] = {}  # volume -> the ask holding it

    def assign(i: int, seen: set[str]) -> bool:  # an augmenting path from ask i
        c = claims[asks[i]]
        for v in volumes:
            if v.name not in seen and serves(v, c):
                seen.add(v.name)
                if v.name not in owner or assign(owner[v.name], seen):
                    owner[v.name] = i
                    return True
        return False

    out = []
    for i, key in enumerate(asks):
        if not assign(i, set()):
            on = sorted({view.bound[p.key] for p in users[key]})
            out += [Violation(rule="binding", subject=p.key,
                              detail=f"claim {key} finds no available volume of its own on {', '.join(on)}")
                    for p in users[key]]
    return out


def check_volume_limits(view: View) -> list[Violation]:
    """NodeVolumeLimits (csi.go Filter) on the end state, as the pods would be bound one at a
    time: a new pod's CSI driver that sets preventPodSchedulingIfMissing is on its node's
    CSINode; and on a node where new pods add a volume of a driver with a limit, the driver's
    volumes there (of the pods present and of VolumeAttachments, once each) are within it."""
    facts = view.facts
    out: list[Violation] = []
    adding: dict[str, list[s.Pod]] = defaultdict(list)
    for p in view.new_pods:
        node = view.bound[p.key]
        mine = facts.csi_volumes.get(p.key, frozenset())
        if node not in facts.csi_drivers:  # no CSINode: the scheduler translates no in-tree volume
            mine -= facts.migrated
        if not mine:
            continue
        missing = sorted({d for d, _ in mine} & facts.csi_required - facts.csi_drivers.get(node, frozenset()))
        if missing:
            out.append(Violation(rule="volume-limits", subject=p.key,
                                 detail=f"{missing[0]} CSI driver is not installed on {node}"))
        if facts.volume_limits.get(node):
            adding[node].append(p)
    for node, pods in sorted(adding.items()):
        old = set(facts.attached.get(node, ()))
        for q in view.present():
            if q.key not in view.bound and q.node == node:
                old |= facts.csi_volumes.get(q.key, frozenset())
        every = set(old)
        for p in pods:
            every |= facts.csi_volumes[p.key]
        for driver, limit in sorted(facts.volume_limits[node].items()):
            ours = {v for v in every if v[0] == driver}
            if ours - old and len(ours) > limit:
                out.extend(Violation(rule="volume-limits", subject=p.key,
                                     detail=f"{len(ours)} {driver} volumes on {node}, past its limit of {limit}")
                           for p in pods if {v for v in facts.csi_volumes[p.key] if v[0] == driver} - old)
    return out


def _matches_all(view: View, terms: tuple[read.PodTerm, ...], pod: s.Pod) -> bool:
    return all(_selects(view, t, pod) for t in terms)


def check_pod_affinity(view: View) -> list[Violation]:
    """Required pod affinity, as the pods would be bound one at a time: each bound pod with
    terms has, in every term's domain, a pod already there matching all its terms; or it is
    the first such pod anywhere and matches its own terms (satisfyPodAffinity). The order is
    found greedily: every pod that is supported, and one first pod only when none is."""
    todo = sorted((p for p in view.new_pods if view.spec(p).affinity), key=lambda p: p.key)
    if not todo:
        return []
    out = []
    where: dict[s.PodKey, read.NodeFacts] = {}  # each pod's node, known to hold its terms' topology keys
    for p in todo:
        node = _where_now(view, p)
        if node is None or any(t.topology_key not in node.labels for t in view.spec(p).affinity):
            out.append(Violation(rule="pod-affinity", subject=p.key,
                                 detail="its node lacks a topology key of its required pod affinity"))
        else:
            where[p.key] = node
    if out:
        return out
    term_sets = {view.spec(p).affinity for p in todo}
    # per term set: the (key, value) domains holding a pod matching all of it
    support: dict[tuple[read.PodTerm, ...], set[tuple[str, str]]] = {terms: set() for terms in term_sets}

    def place(q: s.Pod) -> None:
        node = _where_now(view, q)
        if node is None:
            return
        for terms, domains in support.items():
            if _matches_all(view, terms, q):
                domains.update((t.topology_key, node.labels[t.topology_key]) for t in terms
                               if t.topology_key in node.labels)

    for q in view.running_after_all() + [p for p in view.new_pods if not view.spec(p).affinity]:
        place(q)
    while todo:
        def supported(p: s.Pod) -> bool:
            labels, terms = where[p.key].labels, view.spec(p).affinity
            return all((t.topology_key, labels[t.topology_key]) in support[terms] for t in terms)

        ready = [p for p in todo if supported(p)]
        if not ready:
            ready = [p for p in todo if not support[view.spec(p).affinity]
                     and _matches_all(view, view.spec(p).affinity, p)][:1]
        if not ready:
            return [Violation(rule="pod-affinity", subject=p.key,
                              detail="no pod matching its required affinity is in its domain") for p in todo]
        for p in ready:
            place(p)
        todo = [p for p in todo if p not in ready]
    return out


def check_topology_spread(view: View) -> list[Violation]:
    """PodTopologySpread DoNotSchedule (plugins/podtopologyspread/filtering.go), on the end
    state: for each bound pod's constraint, the matching pods in its domain exceed the fewest
    in any eligible domain (0 when there are fewer than minDomains) by at most maxSkew."""
    out = []
    # pods alike in namespace and node eligibility see the same counts: read them once
    cache: dict[tuple[object, ...], tuple[dict[str, int], int, set[str]]] = {}
    for p in (p for p in view.new_pods if view.spec(p).spread):
        node = _where_now(view, p)
        for c in view.spec(p).spread:
            key = (c, p.namespace, view.spec(p))
            if key not in cache:
                cache[key] = _spread_counts(view, c, p)
            counts, low, eligible = cache[key]
            if node is None or node.name not in eligible:
                out.append(Violation(rule="topology-spread", subject=p.key,
                                     detail=f"node lacks {c.topology_key} or is not one of its domains"))
                continue
            have = counts[node.labels[c.topology_key]]
            if have - low > c.max_skew:
                out.append(Violation(rule="topology-spread", subject=p.key,
                                     detail=f"{have} matching pods in {c.topology_key}="
                                            f"{node.labels[c.topology_key]}, {low} in the emptiest domain, "
                                            f"maxSkew {c.max_skew}"))
    return out


def check_evictions(view: View) -> list[Violation]:
    out = []
    planned = view.planned_roots()
    evicted_units = set()
    for key in view.evicted:
        pod = view.pods.get(s.PodKey(key))
        if pod is None or not view.is_running(pod):
            out.append(Violation(rule="eviction", subject=key, detail="not a running pod"))
            continue
        evicted_units.add(view.victim_unit(pod))
        if pod.terminating:
            out.append(Violation(rule="eviction", subject=key, detail="is being deleted already"))
        if view.root(pod) in planned:
            out.append(Violation(rule="eviction", subject=key, detail="belongs to a workload being planned"))
    for unit in sorted(evicted_units):
        members = view.units[unit]
        missing = [p.key for p in members if p.key not in view.evicted]
        if missing:
            out.append(Violation(rule="victim-unit", subject=unit, detail=f"disruptionMode all: {missing} not evicted"))
    return out


def check_capacity(view: View) -> list[Violation]:
    """Per node and resource requested by a pod bound there:
    Σ new pods + Σ running pods not evicted ≤ allocatable."""
    out = []
    for node_name, new in sorted(view.new_on.items()):
        node = view.node_facts.get(node_name)
        if node is None:
            continue
        for res in sorted({r for p in new for r, v in view.req(p).items() if v > 0}):
            if view.facts.left_to_dra(res, node):
                continue  # the DRA rules check its devices
            used = sum(view.req(p).get(res, 0) for p in new)
            used += sum(view.req(p).get(res, 0) for p in view.running_on[node_name] if p.key not in view.evicted)
            cap = node.allocatable.get(res, 0)
            if used > cap:
                out.append(Violation(rule="capacity", subject=f"{node_name}/{res}",
                                     detail=f"{used} > {cap}", used=used, capacity=cap))
    return out


def check_victims_necessary(view: View) -> list[Violation]:
    """Every evicted victim unit is necessary: on one of its nodes, putting it back
    overflows a resource for the new pods of higher priority there, and one of
    those may preempt it (kube-scheduler evicts only victims it cannot reprieve);
    or putting it back keeps one of its claims' devices held while the plan gives
    that device to a pod (or PodGroup) that may preempt it; or a pod that may preempt it is
    bound on its node and uses a ReadWriteOncePod claim it holds."""
    out = []
    evicted_units = sorted({view.victim_unit(view.pods[s.PodKey(k)]) for k in view.evicted
                            if s.PodKey(k) in view.pods and view.is_running(view.pods[s.PodKey(k)])})
    for unit in evicted_units:
        members = view.units[unit]
        prio = view.victim_priority(members[0])
        necessary = False
        for node_name in sorted({p.node for p in members if p.node}):
            node = view.node_facts[node_name]
            higher = [p for p in view.new_on.get(node_name, []) if view.priority_of_root(view.root(p)) > prio]
            if not any(view.power(p) > prio for p in higher):
                continue
            for res in {r for p in members if p.node == node_name for r in view.req(p)}:
                if view.facts.left_to_dra(res, node):
                    continue  # its devices: needed_for_devices
                demand = sum(view.req(p).get(res, 0) for p in higher)
                if demand == 0:
                    continue
                back = sum(view.req(p).get(res, 0) for p in view.running_on[node_name]
                           if p.key not in view.evicted or view.victim_unit(p) == unit)
                if demand + back > node.allocatable.get(res, 0):
                    necessary = True
        necessary = necessary or needed_for_devices(view, members, prio) or any(
            _in_conflict(view, p, q) for q in members for p in view.new_pods
            if (view.spec(p).anti_affinity or view.spec(p).host_ports or view.spec(p).disks
                or view.spec(q).anti_affinity)
            and view.power(p) > prio) or \
            _needed_for_spread(view, members, prio) or _needed_for_once(view, members, prio)
        if not necessary:
            out.append(Violation(rule="victim-necessary", subject=unit,
                                 detail="could be put back: no higher-priority pod that may preempt it needs its room"))
    return out


def _group_state(view: View) -> tuple[dict[str, int], dict[str, bool]]:
    """new pods bound and gang rule per group, every group of the snapshot."""
    new: dict[str, int] = {}
    ok: dict[str, bool] = {}

    def visit(key: str) -> None:
        group = view.groups[s.GroupKey(key)]
        for child in view.children.get(key, ()):
            visit(child)
        pods = view.subtree_pods(key)
        new[key] = sum(1 for p in pods if p.key in view.bound)
        floor = group.min_count if group.min_count is not None else 1
        if group.kind == s.POD_GROUP:
            running = sum(1 for p in view.members.get(key, ()) if view.running_after(p))
            ok[key] = running + new[key] >= floor
        else:
            ok[key] = sum(ok[c] for c in view.children.get(key, ())) >= floor

    for g in view.snapshot.groups:
        if g.parent is None:
            visit(g.key)
    return new, ok


def satisfied_roots(view: View) -> dict[str, bool]:
    new, ok = _group_state(view)
    out = {}
    for root in view.planned_roots():
        if s.GroupKey(root) in view.groups:
            out[root] = ok[root] and new[root] >= 1
        else:
            out[root] = root.removeprefix(POD_ROOT) in view.bound
    return out


def check_gangs(view: View) -> list[Violation]:
    out = []
    new, ok = _group_state(view)
    for key, group in view.groups.items():
        if new.get(key, 0) > 0 and group.min_count is not None and not ok[key]:
            out.append(Violation(rule="gang", subject=key,
                                 detail=f"binds {new[key]} pods but its gang rule (min {group.min_count}) fails"))
    return out


def check_topology(view: View) -> list[Violation]:
    out = []
    for key, group in view.groups.items():
        if group.topology_key is None:
            continue
        pods = view.subtree_pods(key)
        nodes = {p.node for p in pods if view.running_after(p)} | {view.bound[p.key] for p in pods
                                                                    if p.key in view.bound}
        if not any(p.key in view.bound for p in pods):
            continue
        values = {view.node_facts[n].labels.get(group.topology_key) for n in nodes if n}
        if None in values or len(values) > 1:
            out.append(Violation(rule="topology", subject=key,
                                 detail=f"pods span {sorted(map(str, values))} of {group.topology_key}"))
    return out


def _budgets_of(view: View, pod: s.Pod) -> list[read.Budget]:
    """The budgets of the pod's namespace whose selector selects it (getPodDisruptionBudgets)."""
    labels = view.labels(pod)
    return [b for b in view.facts.budgets
            if b.namespace == pod.namespace and b.selector is not None and b.selector.matches(labels)]


def _evicted_by_pdb(view: View) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for key in view.evicted:
        pod = view.pods.get(s.PodKey(key))
        if pod is not None:
            for budget in _budgets_of(view, pod):
                out[budget.key] += 1
    return out


def _eviction_api(view: View) -> tuple[dict[str, int], list[Violation]]:
    """Each eviction as the Eviction API takes it (eviction.go, EvictionREST.Create and
    checkAndDecrement): a pod in phase Pending (or being deleted) goes without a budget
    (canIgnorePDB); a pod two budgets select is refused (500); an unready pod goes without
    spending when its budget says AlwaysAllow, or when it is healthy enough (currentHealthy ≥
    desiredHealthy > 0); every other one spends a disruption of its budget, refused (429) while
    the budget's status lags its generation. The disruptions spent per budget, and the refusals."""
    refused = []
    spent: dict[str, int] = defaultdict(int)
    for key in sorted(view.evicted):
        pod = view.pods.get(s.PodKey(key))
        if pod is None or key in view.facts.budget_free:
            continue
        budgets = _budgets_of(view, pod)
        if len(budgets) > 1:
            refused.append(Violation(rule="eviction-api", subject=key, detail=f"selected by {len(budgets)} "
                                     "PodDisruptionBudgets: the Eviction API refuses it"))
            continue
        if not budgets:
            continue
        budget = budgets[0]
        unhealthy_goes = budget.always_allow_unhealthy or \
            (budget.current_healthy >= budget.desired_healthy and budget.desired_healthy > 0)
        if not view.facts.ready[key] and unhealthy_goes:
            continue
        if budget.observed_generation < budget.generation:
            refused.append(Violation(rule="eviction-api", subject=key, detail=(
                f"{budget.key}: status.observedGeneration {budget.observed_generation} < generation "
                f"{budget.generation}: the Eviction API refuses it")))
        spent[budget.key] += 1
    return spent, refused


def check_pdbs_strict(view: View) -> list[Violation]:
    """Every eviction accepted by the Eviction API, and no budget spending more than
    disruptionsAllowed."""
    spent, refused = _eviction_api(view)
    return refused + [Violation(rule="pdb", subject=b.key, detail=f"evicts {spent[b.key]}, disruptionsAllowed is "
                                f"{max(0, b.disruptions_allowed)}")
                      for b in view.facts.budgets if spent[b.key] > max(0, b.disruptions_allowed)]


def check_objective(view: View) -> list[Violation]:
    out = []
    o = view.plan.objective
    sat = satisfied_roots(view)
    by_priority: defaultdict[int, int] = defaultdict(int)  # the satisfied workloads' values
    for root, ok in sat.items():
        by_priority[view.priority_of_root(root)] += view.facts.values.get(root, 1) * ok
    cost = 0.0
    for key in view.evicted:
        pod = view.pods.get(s.PodKey(key))
        if pod is None:
            continue
        prio = view.victim_priority(pod)
        cost += pod.preemption_cost_milli / 1000 if pod.preemption_cost_milli is not None else 1 + max(0, prio)
    evicted_by_pdb = _eviction_api(view)[0] if view.strict_pdbs else _evicted_by_pdb(view)
    violations = sum(max(0, evicted_by_pdb[b.key] - max(0, b.disruptions_allowed)) for b in view.facts.budgets)
    want = {
        "satisfiedWorkloads": (o.satisfied_workloads, sum(sat.values())),
        "placedPods": (o.placed_pods, len(view.bound)),
        "pdbViolations": (o.pdb_violations, violations),
        "evictedPods": (o.evicted_pods, len(view.evicted)),
    }
    for name, (have, expect) in want.items():
        if have != expect:
            out.append(Violation(rule="objective", subject=name, detail=f"plan says {have}, recomputed {expect}"))
    if abs(o.preemption_cost - cost) > 1e-6 * max(1.0, cost):
        out.append(Violation(rule="objective", subject="preemptionCost",
                             detail=f"plan says {o.preemption_cost}, recomputed {cost}"))
    if {p: n for p, n in by_priority.items() if n} != {p: n for p, n in o.satisfied_by_priority.items() if n}:
        out.append(Violation(rule="objective", subject="satisfiedByPriority", detail="does not match the workloads"))
    if o.preemption_cost_bound > o.preemption_cost + 1e-9:
        out.append(Violation(rule="objective", subject="preemptionCostBound", detail="bound above the plan's cost"))
    return out
