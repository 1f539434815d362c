"""Replay (issue 29, item 3): gangplace's plan, and the greedy baseline's, carried out on a
fresh real control plane (kube-apiserver and kube-scheduler 1.37.2) as the adapter would,
by ``solver.bench.replay``: the plan's evictions through the Eviction API (strict) or as
deletes (soft), then only the planned pending pods, each pinned to its planned node by a
required node-affinity term, bound by the real scheduler with every default filter on.

Each case says, per (planner, pdb policy), how many bindings and evictions its plan has (so a
plan that quietly does nothing fails here), and the replay must take the plan whole: every
eviction accepted, every planned pod bound where planned, no other pod deleted.

A control plane start costs seconds, so plans are replayed once each: a (planner, policy)
whose plan is the same as another's in the same case (same bindings, same evictions, and the
same eviction path when it evicts) shares that replay. A plan with nothing to carry out is
not replayed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from solver import api, kube, reading
from solver.bench import replay as replay_mod
from solver.kube import loader
from tests import dra_builders as dra
from tests.builders import admitted, node, pdb, pod, pod_group
from tests.controlplane import test_refusals_vs_upstream as refusals
from tests.pipeline import test_refusals as cases

ROOT = Path(__file__).resolve().parent.parent.parent
Objs = list[dict[str, Any]]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _example(name: str) -> Callable[[], Objs]:
    return lambda: kube.flatten(loader.read_documents(ROOT / "examples" / name))


def _wait_for_first_consumer() -> Objs:
    # an unbound claim whose class binds at the first consumer: the scheduler binds it to the
    # one local volume, on n2, at PreBind (the PV binder completes the binding)
    return refusals._docs(*cases.NODES, cases._class("local", "WaitForFirstConsumer"), cases._pv("pv-2", "n2"),
                          cases._pvc("data"), cases._with_claim(pod("p").cpu_m(1000), "data"))


def _runtime_overhead() -> Objs:
    # 900m asked + the class's 250m overhead fit n2 only
    return refusals._docs(node("n1").cpu_m(1000), node("n2").cpu_m(2000), cases._runtime_class("kata", "250m"),
                          cases._runs_in(pod("p").cpu_m(900), "kata"))


def _term(app: str, key: str = HOST) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _pod_affinity(builder: Any, kind: str, app: str) -> Any:
    builder.obj["spec"].setdefault("affinity", {})[kind] = {
        "requiredDuringSchedulingIgnoredDuringExecution": [_term(app)]}
    return builder


def _inter_pod() -> Objs:
    """n2 runs a cache; "web" must share its node, "batch" must avoid it, and the gang "ring"
    of three must take one node each; a low-priority filler on n3 goes so that the ring fits."""
    return admitted([
        *(node(n).cpu_m(4000).build() for n in ("n1", "n2", "n3")),
        pod("cache").on("n2").cpu_m(1000).priority(1000).label("app", "cache").build(),
        pod("filler").on("n3").cpu_m(3500).priority(0).build(),
        _pod_affinity(pod("web").cpu_m(500).priority(100), "podAffinity", "cache").build(),
        _pod_affinity(pod("batch").cpu_m(500).priority(100), "podAntiAffinity", "cache").build(),
        pod_group("ring", 3).priority(100).build(),
        *(_pod_affinity(pod(f"ring-{i}").group("ring").cpu_m(1000).label("app", "ring"), "podAntiAffinity",
                        "ring").build() for i in range(3)),
    ])


def _spread() -> Objs:
    """Zone a runs two pods of "spread"; two more, maxSkew 1 over zones (DoNotSchedule), must
    both go to zone b."""
    def spreading(builder: Any) -> Any:
        builder.obj["spec"]["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "spread"}}}]
        return builder.label("app", "spread")

    return admitted([
        node("a1").zone("a").cpu_m(8000).build(), node("b1").zone("b").cpu_m(4000).build(),
        *(spreading(pod(f"old-{i}").on("a1").cpu_m(1000).priority(100)).build() for i in range(2)),
        *(spreading(pod(f"new-{i}").cpu_m(1000).priority(100)).build() for i in range(2)),
    ])


def _budget_in_the_way() -> Objs:
    """p fits only where v runs, and v's budget allows no disruption: a strict plan leaves p
    pending; a soft one deletes v (no budget refuses a delete)."""
    victim = pod("v").on("n1").cpu_m(4000).priority(0).label("app", "db")
    return admitted([node("n1").cpu_m(4000).build(), victim.build(), pdb("db", 0, app="db").build(),
                     pod("p").cpu_m(2000).priority(100).build()])


def _dra_small() -> Objs:
    """n0 has two GPUs, one held by a low-priority pod through an allocated claim; a gang of
    two, a GPU each from a template, fits only once that pod goes and its claim is freed."""
    return admitted([
        node("n0").cpu_m(8000).build(), dra.gpu_slice("n0", 2).build(),
        dra.device_class("gpu", f'device.driver == "{dra.DRIVER}"').build(),
        dra.claim("low-gpu", dra.request("gpu", count=1), allocated=[("n0", "gpu-0")], node="n0",
                  reserved_for=["low"]).build(),
        dra.with_claims(pod("low").on("n0").cpu_m(1000).priority(0), gpu="claim:low-gpu").build(),
        dra.claim_template("one-gpu", dra.request("gpu", count=1)).build(),
        pod_group("train", 2).priority(100).build(),
        *(dra.with_claims(pod(f"train-{i}").group("train").cpu_m(1000), gpu="one-gpu").build() for i in range(2)),
    ])


Counts = tuple[int, int]  # (bindings, evictions) of the plan
BOTH = ("gangplace", "baseline")

# case: (objects, {(planner, policy): (bindings, evictions)}); a (planner, policy) not listed
# is not replayed for that case: where no pod is evicted, strict and soft plan alike
CASES: dict[str, tuple[Callable[[], Objs], dict[tuple[str, str], Counts]]] = {
    "pod-level resources": (refusals._pod_level, {(p, "strict"): (1, 0) for p in BOTH}),
    "host network ports": (refusals._host_network, {(p, "strict"): (1, 0) for p in BOTH}),
    "claim bound to a local volume": (refusals._bound_local_volume, {(p, "strict"): (1, 0) for p in BOTH}),
    "wait for first consumer": (_wait_for_first_consumer, {(p, "strict"): (1, 0) for p in BOTH}),
    "declared feature": (refusals._declared_feature, {(p, "strict"): (1, 0) for p in BOTH}),
    "runtime class overhead": (_runtime_overhead, {(p, "strict"): (1, 0) for p in BOTH}),
    "inter-pod affinity": (_inter_pod, {(p, "strict"): (5, 1) for p in BOTH}),
    "topology spread": (_spread, {(p, "strict"): (2, 0) for p in BOTH}),
    # the batch budget allows 2: both batch pods go through the Eviction API, with the `all` group
    "gang preemption": (_example("gang-preemption.yaml"), {(p, q): (4, 4) for p in BOTH for q in ("strict", "soft")}),
    "budget in the way": (_budget_in_the_way, {**{(p, "strict"): (0, 0) for p in BOTH},
                                               **{(p, "soft"): (1, 1) for p in BOTH}}),
    # the notebooks' budget allows 3, the eval gang goes whole
    "composite pod group": (_example("composite-zone-rack.yaml"),
                            {(p, q): (4, 5) for p in BOTH for q in ("strict", "soft")}),
    # the baseline plans as upstream 1.37, which frees no device by preemption: nothing
    "dra gpus": (_example("dra-gpus.yaml"), {("gangplace", "strict"): (4, 1), ("gangplace", "soft"): (4, 1),
                                            ("baseline", "strict"): (0, 0)}),
    "dra small": (_dra_small, {("gangplace", "strict"): (2, 1), ("gangplace", "soft"): (2, 1),
                                                   ("baseline", "strict"): (0, 0)}),
}
PARAMS = [(c, p, q) for c, (_, plans) in CASES.items() for p, q in plans]

_replays: dict[tuple[Any, ...], replay_mod.ReplayResult] = {}  # one replay per distinct plan


def _plan(docs: Objs, planner: str, policy: str) -> Any:
    options = api.PlanOptions(time_limit=10, pdb_policy=policy, baseline_only=planner == "baseline")
    return api.plan(reading.read(docs), options)


@pytest.mark.parametrize(("case", "planner", "policy"), PARAMS, ids=[" / ".join(p) for p in PARAMS])
def test_the_real_control_plane_takes_the_plan_whole(case: str, planner: str, policy: str) -> None:
    build, expected = CASES[case]
    docs = build()
    plan = _plan(docs, planner, policy)
    planned = {b.pod: b.node for b in plan.bindings}
    victims = [e.pod for e in plan.evictions]
    assert (len(planned), len(victims)) == expected[planner, policy], (planned, victims)
    if not planned and not victims:
        return  # nothing to carry out
    strict = policy == "strict"
    key = (case, tuple(sorted(planned.items())), tuple(victims), strict if victims else None)
    if key not in _replays:
        _replays[key] = replay_mod.replay(docs, plan, strict=strict)
    result = _replays[key]
    problems = result.problems()
    assert not problems, "the real control plane did not take the plan:\n" + "\n".join(problems)
    assert (result.evicted, result.refused, result.bindings, result.deleted, result.pending, result.settled) == \
        (victims, {}, planned, [], [], True)


def test_the_replay_sees_a_plan_the_cluster_does_not_take() -> None:
    # the soft plan of "budget in the way" carried out strictly: the Eviction API refuses v (its
    # budget allows no disruption), so p, pinned to v's node, does not fit, and the real
    # scheduler's preemption deletes v, which no budget stops
    docs = _budget_in_the_way()
    plan = _plan(docs, "gangplace", "soft")
    result = replay_mod.replay(docs, plan, strict=True)
    assert list(result.refused) == ["default/v"] and result.refused["default/v"].startswith("429 ")
    assert "disruption budget" in result.refused["default/v"]
    assert (result.evicted, result.deleted, result.bindings) == ([], ["default/v"], {"default/p": "n1"})
    assert result.problems()[0].startswith("eviction of default/v refused: 429 ")
