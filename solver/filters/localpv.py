"""VolumeBinding's static volumes, one claim each: a pending pod's claim that only volumes local
to one node can serve (WaitForFirstConsumer, a class that does not provision, every available
volume matching it bound by node affinity to a single node) takes one of that node's volumes,
and no two claims take the same one. Upstream assumes each binding as it schedules a pod
(binder.go ``findMatchingVolumes``, the smallest volume that fits), so the next pod finds the
volume gone.

A claim needs a volume of its storage class, with its access modes and at least its size. Per
node and pool (class, access modes), for every size t a claim of the pool asks, the pool's
claims of at least t placed there are at most its volumes of at least t (Hall's condition,
exact when sizes nest, as they do within a pool). A volume that serves two pools' modes is
counted in each (lenient when one class's claims ask different modes). A claim several pending
pods name binds once: it takes one volume, on the node all of them go to (``Pod.shared_local``,
``shared_room``; the model's ``constraints/volumes._shared_claims``). Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable

from solver.core import snapshot as s

Pool = tuple[str, frozenset[str]]  # (storage class, access modes a claim asks)


def pools(pods: Iterable[s.Pod]) -> dict[Pool, list[int]]:
    """Per pool the pods' claims ask of, the sizes they ask, sorted."""
    out: dict[Pool, set[int]] = {}
    for pod in pods:
        for cls, modes, size in pod.local_claims:
            out.setdefault((cls, modes), set()).add(size)
    return {pool: sorted(sizes) for pool, sizes in out.items()}


def need(pod: s.Pod, pool: Pool, size: int) -> int:
    """The pod's claims of ``pool`` asking at least ``size``."""
    return sum(1 for cls, modes, want in pod.local_claims if (cls, modes) == pool and want >= size)


def have(node: s.Node, pool: Pool, size: int) -> int:
    """The node's available volumes of ``pool``'s class, with its modes, of at least ``size``."""
    return sum(1 for got, modes in node.local_volumes.get(pool[0], ()) if got >= size and pool[1] <= modes)


def shared_room(node: s.Node, pod: s.Pod, taken: Iterable[tuple[str, frozenset[str], int]] = ()) -> bool:
    """Whether the node has a volume for each claim ``pod`` shares with other pending pods
    (``Pod.shared_local``), beside the claims ``taken`` there already (pool, modes, size each):
    every size asked counts, as in ``room``."""
    asks = [(cls, modes, size) for _, cls, modes, size in pod.shared_local]
    every = [*asks, *taken]
    for pool in {(cls, modes) for cls, modes, _ in asks}:
        for size in {want for cls, modes, want in every if (cls, modes) == pool}:
            used = sum(1 for cls, modes, want in every if (cls, modes) == pool and want >= size)
            if used > have(node, pool, size):
                return False
    return True


def room(node: s.Node, pod: s.Pod, placed: Iterable[tuple[s.Pod, int]] = ()) -> int | None:
    """How many more pods like ``pod`` the node's volumes serve beside ``placed`` (pod, count);
    None when the pod asks none. Every size a claim of the pool asks there counts, the placed
    pods' too: a small claim placed before may leave no room at its size for a larger one."""
    if not pod.local_claims:
        return None
    placed = list(placed)
    asked = pools([pod, *(p for p, _ in placed)])
    most: int | None = None
    for pool in pools([pod]):
        for size in asked[pool]:
            left = have(node, pool, size) - sum(need(p, pool, size) * n for p, n in placed)
            mine = need(pod, pool, size)
            if not mine:
                if left < 0:
                    return 0
                continue
            fit = max(0, left) // mine
            most = fit if most is None else min(most, fit)
    return most
