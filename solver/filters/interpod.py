"""Inter-pod rules in the placement problem: which pods each term or spread constraint
matches, aggregated to pod classes.

Filters of kube-scheduler 1.37's default profile that relate pods to one another:

- InterPodAffinity (plugins/interpodaffinity/filtering.go): a pod's required anti-affinity
  term refuses a domain holding a pod it matches (satisfyPodAntiAffinity); a running or
  placed pod's term refuses a pod it matches in its domain (satisfyExistingPodsAntiAffinity);
  a pod's required affinity needs, in each term's domain, a pod matching all its terms, or it
  is the first one: no pod anywhere matches and it matches its own terms (satisfyPodAffinity).
  Terminating pods count.
- PodTopologySpread with DoNotSchedule (plugins/podtopologyspread/filtering.go): in the
  pod's domain the matching pods may exceed the fewest in any eligible domain (0 below
  minDomains) by at most maxSkew. Terminating pods do not count (countPodsMatchSelector).
- NodePorts (plugins/nodeports/node_ports.go): one host port per node (HostPortInfo).

Aggregation: a pod's labels matter only through the terms and constraints of the snapshot,
so a class carries the vector of which ``matchers`` its pods match (``vector``); pods that
differ in an unused label (an Indexed Job's completion index) stay one class.

Decisions where upstream's sequential view needs one for a joint plan (each also checked by
``solver.verify``):

- Anti-affinity and host ports are checked between every two pods of the plan's end state
  but never between two running pods.
- Required affinity, per *family* (the classes whose pods carry the same terms): in each
  term's domain holding a family pod there is a base pod matching all terms (a running one
  not evicted, or a placed one without required affinity), or that domain holds the family's
  one first pod. A first pod exists only where nothing outside the family matches the terms
  (no running pod, no other pending class) and the family's pods match them; then the whole
  family shares the first pod's domains. Support from pods of other affine classes is not
  counted (conservative: such chains could need an order the plan does not fix).
- Spread is checked on the end state, for every placed pod as if it came last.
- Anti-affinity and host-port conflicts are reasons an eviction is necessary, and so is a
  victim whose return would push a placed pod's domain past its spread constraint's maxSkew.
Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from solver.core import snapshot as s
from solver.filters import selectors

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class SpreadMatcher:
    """A spread constraint as a pod matcher: same namespace as its owner, selector matches."""

    constraint: s.SpreadConstraint
    namespace: str


Matcher = s.PodAffinityTerm | SpreadMatcher


@dataclass(slots=True)
class InterPod:
    matchers: list[Matcher] = field(default_factory=list)
    index: dict[Matcher, int] = field(default_factory=dict)
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # (matcher, key) -> node label value -> running pods there the matcher matches: every
    # sub-model of a decomposition reads the same answer
    _running: dict[tuple[Matcher, str], dict[str, list[s.Pod]]] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return bool(self.matchers)

    def matches(self, matcher: Matcher, pod: s.Pod) -> bool:
        if isinstance(matcher, SpreadMatcher):
            return (matcher.constraint.selector is not None and pod.namespace == matcher.namespace
                    and not pod.terminating and selectors.label_selector_matches(matcher.constraint.selector,
                                                                                pod.labels))
        return selectors.pod_term_matches(matcher, pod, selectors.namespace_labels(self.namespace_labels,
                                                                                   pod.namespace))

    def vector(self, pod: s.Pod) -> tuple[bool, ...]:
        return tuple(self.matches(m, pod) for m in self.matchers) if self.matchers else ()

    def matches_all(self, terms: Sequence[s.PodAffinityTerm], pod: s.Pod) -> bool:
        return all(self.matches(t, pod) for t in terms)

    def running_matches(self, matcher: Matcher, key: str, running: Sequence[s.Pod],
                        nodes: Mapping[s.NodeName, s.Node]) -> dict[str, list[s.Pod]]:
        """The running pods the matcher matches, by their node's value of ``key`` (cached)."""
        out = self._running.get((matcher, key))
        if out is None:
            out = self._running[matcher, key] = defaultdict(list)
            for q in running:
                value = nodes[q.node].labels.get(key) if q.node else None
                if value is not None and self.matches(matcher, q):
                    out[value].append(q)
        return out


def collect(snapshot: s.ClusterSnapshot) -> InterPod:
    """Every anti-affinity term (any pod), and every affinity term and spread constraint of a
    pending pod, in first-seen order."""
    out = InterPod(namespace_labels=snapshot.namespace_labels)

    def add(m: Matcher) -> None:
        if m not in out.index:
            out.index[m] = len(out.matchers)
            out.matchers.append(m)

    for pod in snapshot.pods:
        for t in pod.pod_anti_affinity:
            add(t)
        if pod.node is None:
            for t in pod.pod_affinity:
                add(t)
            for c in pod.spread:
                add(SpreadMatcher(c, pod.namespace))
    return out


def own_signature(pod: s.Pod) -> tuple[object, ...]:
    """What of a pending pod's own inter-pod rules a class shares."""
    return (pod.pod_affinity, pod.pod_anti_affinity, pod.spread, pod.host_ports, pod.disks, pod.namespace)


def blocked(interpod: InterPod, pod: s.Pod, fixed: Sequence[tuple[s.Pod, s.Node]]) -> set[tuple[str, str]]:
    """(key, value) domains, and ("", node) nodes, where a pod like ``pod`` can never go because
    of a running pod that no plan evicts (``fixed``, each with its node): its anti-affinity
    either way, or a host port."""
    out: set[tuple[str, str]] = set()
    for q, node in fixed:
        for t in pod.pod_anti_affinity:
            if t.topology_key in node.labels and interpod.matches(t, q):
                out.add((t.topology_key, node.labels[t.topology_key]))
        for t in q.pod_anti_affinity:
            if t.topology_key in node.labels and interpod.matches(t, pod):
                out.add((t.topology_key, node.labels[t.topology_key]))
        if selectors.pods_clash(pod, q):
            out.add(("", node.name))
    return out


def node_allowed(pod: s.Pod, node: s.Node, blocked_domains: set[tuple[str, str]]) -> bool:
    """The node has every key the pod's affinity terms and spread constraints name, and no
    blocked domain."""
    labels = node.labels
    if any(t.topology_key not in labels for t in pod.pod_affinity):
        return False
    if any(c.topology_key not in labels for c in pod.spread):
        return False
    if ("", node.name) in blocked_domains:
        return False
    return not any((k, v) in blocked_domains for k, v in labels.items())


def by_domain(nodes: Mapping[s.NodeName, s.Node], names: Sequence[s.NodeName], key: str
              ) -> dict[str, list[s.NodeName]]:
    out: dict[str, list[s.NodeName]] = defaultdict(list)
    for n in names:
        value = nodes[n].labels.get(key)
        if value is not None:
            out[value].append(n)
    return out
