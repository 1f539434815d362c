"""Static node feasibility for a pod, as kube-scheduler's filter plugins decide it.

Covers NodeUnschedulable, NodeAffinity (nodeSelector and required node
affinity) and TaintToleration. Capacity is not checked here: it depends on
evictions and is the model's job. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from solver.core import snapshot as s
from solver.filters import attach

# kube-scheduler's NodeUnschedulable plugin treats spec.unschedulable as this taint.
UNSCHEDULABLE_TAINT = s.Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def requirement_matches(req: s.SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One label requirement against a label map (upstream labels.Requirement.Matches)."""
    present = req.key in labels
    value = labels.get(req.key, "")
    if req.operator == "In":
        return present and value in req.values
    if req.operator == "NotIn":
        return not present or value not in req.values
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    if req.operator in ("Gt", "Lt"):
        # Gt/Lt compare the label as an integer; a non-integer label never matches.
        if not present or len(req.values) != 1:
            return False
        have, want = parse_int64(value), parse_int64(req.values[0])
        if have is None or want is None:
            return False
        return have > want if req.operator == "Gt" else have < want
    return False


_INT64 = re.compile(r"[+-]?[0-9]+")


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64), as labels.Requirement.Matches reads a Gt/Lt label: an
    optional sign and ASCII digits only (no spaces, no underscores), within int64; else None."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def term_matches(term: s.NodeSelectorTerm, node: s.Node) -> bool:
    """All expressions and fields of one term hold; an empty term matches nothing (upstream)."""
    if not term.match_expressions and not term.match_fields:
        return False
    fields = {"metadata.name": node.name}
    return all(requirement_matches(r, node.labels) for r in term.match_expressions) and all(
        requirement_matches(r, fields) for r in term.match_fields
    )


def named_nodes(pod: s.Pod) -> frozenset[str] | None:
    """NodeAffinity's PreFilter (node_affinity.go ``PreFilter``): when every required term names
    nodes by ``metadata.name In``, the nodes they name (per term the intersection of its such
    fields, the union over terms; empty: the terms conflict); None when some term does not.
    Upstream tries only those nodes: each other one "didn't satisfy plugin(s) [NodeAffinity]",
    before any filter."""
    if not pod.affinity_terms:
        return None
    out: set[str] = set()
    for term in pod.affinity_terms:
        names: set[str] | None = None
        for req in term.match_fields:
            if req.key == "metadata.name" and req.operator == "In":
                names = set(req.values) if names is None else names & set(req.values)
        if names is None:
            return None
        out |= names
    return frozenset(out)


def affinity_matches(pod: s.Pod, node: s.Node) -> bool:
    """nodeSelector (every pair) and required node affinity (any term)."""
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return not pod.affinity_terms or any(term_matches(t, node) for t in pod.affinity_terms)


def tolerates(toleration: s.Toleration, taint: s.Taint) -> bool:
    """upstream v1.Toleration.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def node_taints(node: s.Node) -> Iterable[s.Taint]:
    yield from node.taints
    if node.unschedulable:
        yield UNSCHEDULABLE_TAINT


def taints_tolerated(pod: s.Pod, node: s.Node) -> bool:
    """Every NoSchedule/NoExecute taint (PreferNoSchedule is only a score) is tolerated."""
    return all(
        any(tolerates(t, taint) for t in pod.tolerations)
        for taint in node_taints(node)
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def statically_feasible(pod: s.Pod, node: s.Node) -> bool:
    return affinity_matches(pod, node) and taints_tolerated(pod, node) and features_declared(pod, node) \
        and volumes_reachable(pod, node) and attach.drivers_installed(pod, node)


def volumes_reachable(pod: s.Pod, node: s.Node) -> bool:
    """VolumeBinding's PreFilter and Filter as the pod's claims demand them (kube/volumes.py):
    no claim refused, and each claim's volume (bound, available or provisioned) usable there. A
    pod refused only by ReadWriteOncePod holders upstream may preempt (``Pod.once_holders``)
    may use their node, once they are evicted (the model, the baseline and the verifier ask
    that)."""
    open_ = not pod.volume_block or (pod.once_node is not None and node.name == pod.once_node)
    return open_ and all(any(term_matches(t, node) for t in terms) for terms in pod.volume_terms)


def features_declared(pod: s.Pod, node: s.Node) -> bool:
    """NodeDeclaredFeatures' Filter (plugins/nodedeclaredfeatures): every feature the pod needs
    is in the node's ``status.declaredFeatures``."""
    return all(f in node.declared_features for f in pod.required_features)


def namespace_labels(snapshot_labels: Mapping[str, Mapping[str, str]], namespace: str) -> Mapping[str, str]:
    """A namespace's labels; one without a Namespace object has the label every namespace gets
    (kubernetes.io/metadata.name) and no other."""
    return snapshot_labels.get(namespace) or {"kubernetes.io/metadata.name": namespace}


def pod_term_matches(term: s.PodAffinityTerm, pod: s.Pod, ns_labels: Mapping[str, str]) -> bool:
    """upstream AffinityTerm.Matches: the pod's namespace is named or selected, and its labels
    match the term's selector."""
    if term.selector is None:
        return False
    if pod.namespace not in term.namespaces and (
            term.namespace_selector is None or not label_selector_matches(term.namespace_selector, ns_labels)):
        return False
    return label_selector_matches(term.selector, pod.labels)


def spread_matches(constraint: s.SpreadConstraint, owner: s.Pod, pod: s.Pod) -> bool:
    """``pod`` counts toward ``owner``'s constraint: same namespace, selector matches, not
    terminating (countPodsMatchSelector, plugins/podtopologyspread/common.go)."""
    return (constraint.selector is not None and pod.namespace == owner.namespace and not pod.terminating
            and label_selector_matches(constraint.selector, pod.labels))


def spread_eligible(constraint: s.SpreadConstraint, owner: s.Pod, node: s.Node) -> bool:
    """The node is one of the constraint's domains for ``owner``: it has the key of every one of
    the owner's constraints (nodeLabelsMatchSpreadConstraints), and passes the owner's node
    affinity (nodeAffinityPolicy Honor) and taints (nodeTaintsPolicy Honor)."""
    if constraint.topology_key not in node.labels or any(c.topology_key not in node.labels for c in owner.spread):
        return False
    if constraint.honor_node_affinity and not affinity_matches(owner, node):
        return False
    return not constraint.honor_node_taints or taints_tolerated(owner, node)


def ports_conflict(a: s.HostPort, b: s.HostPort) -> bool:
    """upstream HostPortInfo.CheckConflict: same protocol and port, and the same IP or either
    one 0.0.0.0."""
    return a.protocol == b.protocol and a.port == b.port and (a.ip == b.ip or "0.0.0.0" in (a.ip, b.ip))


def host_ports_clash(a: Iterable[s.HostPort], b: Iterable[s.HostPort]) -> bool:
    """Two pods' host ports cannot share a node: one of each conflicts."""
    theirs = tuple(b)
    return any(ports_conflict(x, y) for x in a for y in theirs)


def disks_clash(a: Iterable[s.Disk], b: Iterable[s.Disk]) -> bool:
    """Two pods' inline disks cannot share a node (VolumeRestrictions ``isVolumeConflict``)."""
    theirs = tuple(b)
    return any(x.source == y.source and not (x.read_only and y.read_only) and not x.ids.isdisjoint(y.ids)
               for x in a for y in theirs)


def exclusive(pod: s.Pod) -> bool:
    """Whether the pod holds something of a node no conflicting pod may share: a host port or
    an inline disk."""
    return bool(pod.host_ports or pod.disks)


def pods_clash(a: s.Pod, b: s.Pod) -> bool:
    """Two pods cannot share a node: a host port (NodePorts) or a disk (VolumeRestrictions)."""
    return host_ports_clash(a.host_ports, b.host_ports) or disks_clash(a.disks, b.disks)


def label_selector_matches(selector: s.LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics: matchLabels AND matchExpressions; empty matches all."""
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    return all(requirement_matches(r, labels) for r in selector.match_expressions)
