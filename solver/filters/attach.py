"""NodeVolumeLimits: the CSI volumes attached to a node stay within its CSINode's count per
driver (plugins/nodevolumelimits/csi.go ``Filter``; kube/volumes.py reads the objects).

A pod's volumes are ``Pod.csi_volumes`` (driver, unique name). On a node, upstream counts
the volumes of every pod bound there and of the node's VolumeAttachments, once each; a new
pod passes when, for every driver with a limit, those plus its own volumes not among them
stay within the limit. A pod adding no volume of a driver passes whatever that driver's
count; a node without a CSINode, or a driver without ``allocatable.count``, has no limit.

A plan's evictions never lessen the count here: a victim's volumes stay counted (upstream's
preemption counts them gone unless a VolumeAttachment holds them), so gangplace never
evicts for a volume slot. But a volume is the new pod's own again once every pod holding it
is evicted: a pod asking only volumes the node holds passes whatever the count while a
holder stays (``free``), and is held to the limit like any other once none does. That
refuses some placements upstream would reach by preempting; it never allows one upstream
refuses (the verifier checks upstream's rule on the plan's end state, the pods bound after
the evictions). The model keeps a holder with a row (constraints/volumes.py); the baseline,
which places before it looks for victims, refuses to evict one a pod it placed relies on
(``greedy.State.strands_a_volume``).
Pure: no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from solver.core import snapshot as s

Volume = tuple[str, str]  # (driver, unique name)


def held(snapshot: s.ClusterSnapshot) -> dict[s.NodeName, frozenset[Volume]]:
    """Per node with a limit: the volumes of the pods bound to it and of its VolumeAttachments."""
    limited = {n.name for n in snapshot.nodes if n.volume_limits}
    out: dict[s.NodeName, set[Volume]] = {n.name: set(n.attached_volumes) for n in snapshot.nodes
                                          if n.name in limited}
    for pod in snapshot.pods:
        if pod.node in limited and pod.csi_volumes:
            out[pod.node].update(pod.csi_volumes)
    return {name: frozenset(v) for name, v in out.items()}


def new_volumes(node: s.Node, have: frozenset[Volume] | set[Volume], volumes: Iterable[Volume]
                ) -> dict[str, set[Volume]]:
    """Per driver with a limit on ``node``: the ``volumes`` it does not hold yet."""
    out: dict[str, set[Volume]] = {}
    for vol in volumes:
        if vol[0] in node.volume_limits and vol not in have:
            out.setdefault(vol[0], set()).add(vol)
    return out


def room(node: s.Node, have: Iterable[Volume]) -> Mapping[str, int]:
    """Per driver with a limit on ``node``: how many more volumes it may attach (below 0 past it)."""
    counted = Counter(d for d, _ in have)
    return {d: limit - counted[d] for d, limit in node.volume_limits.items()}


def holders(snapshot: s.ClusterSnapshot) -> dict[s.NodeName, dict[Volume, tuple[s.PodKey, ...]]]:
    """Per node with a limit: each volume its running pods hold, with those pods (a volume a
    VolumeAttachment holds is not listed: nothing frees it)."""
    limited = {n.name: n for n in snapshot.nodes if n.volume_limits}
    out: dict[s.NodeName, dict[Volume, list[s.PodKey]]] = {}
    for pod in snapshot.pods:
        node = limited.get(pod.node) if pod.node is not None else None
        if node is not None:
            for vol in pod.csi_volumes:
                if vol not in node.attached_volumes:
                    out.setdefault(node.name, {}).setdefault(vol, []).append(pod.key)
    return {n: {v: tuple(ps) for v, ps in vols.items()} for n, vols in out.items()}


def refuses(node: s.Node, have: frozenset[Volume] | set[Volume], volumes: Iterable[Volume],
            free: frozenset[Volume] | set[Volume] | None = None) -> bool:
    """Whether a pod with ``volumes`` is refused on ``node``, which holds ``have`` (``free``:
    those of them a pod still there holds, all of ``have`` when None): for a driver with a
    limit whose volumes of the pod are not all free, the driver's volumes held with the pod's
    pass the limit."""
    if not node.volume_limits:
        return False
    free = have if free is None else free
    mine: dict[str, set[Volume]] = {}
    for vol in volumes:
        if vol[0] in node.volume_limits:
            mine.setdefault(vol[0], set()).add(vol)
    return any(not vols <= free and len({v for v in have if v[0] == d} | vols) > node.volume_limits[d]
               for d, vols in mine.items())


def drivers_installed(pod: s.Pod, node: s.Node) -> bool:
    """VolumeLimitScaling's check (``checkCSIDriverOnNode``): every driver of the pod's volumes
    whose CSIDriver sets preventPodSchedulingIfMissing is on the node's CSINode."""
    return pod.csi_required <= node.csi_drivers
