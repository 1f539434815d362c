"""Property: on random small clusters the aggregated model's tiers equal a naive model's.

The generator covers composite trees, rack/zone topology at two levels, running
gang members, `disruptionMode: all` victim units, PDBs, priorities with
`preemptionPolicy: Never`, taints and selectors. Every plan passes
``solver.verify``; the greedy baseline's plan is verified too and never beats
the optimum.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from solver import api, verify
from solver.model import greedy
from solver.model.decode import make_plan
from solver.model.problem import build_problem
from tests import builders as b
from tests.solver.naive import naive_tiers

CPU = st.sampled_from([500, 1000, 2000, 3000])


@st.composite
def clusters(draw: Any) -> list[Any]:
    objs: list[Any] = []
    n_nodes = draw(st.integers(1, 4))
    for i in range(n_nodes):
        nb = b.node(f"n{i}").cpu_m(draw(st.sampled_from([2000, 4000, 6000]))).pods(draw(st.sampled_from([3, 110])))
        if draw(st.booleans()) or i == 0:
            nb.rack(f"r{i // 2}").zone(f"z{i // 3}")
        if draw(st.integers(0, 5)) == 0:
            nb.taint("dedicated", "x")
        objs.append(nb)
    nodes = [f"n{i}" for i in range(n_nodes)]
    # running background: single pods and `all` groups
    for i in range(draw(st.integers(0, 5))):
        p = b.pod(f"bg{i}").on(draw(st.sampled_from(nodes))).cpu_m(draw(CPU)).priority(draw(st.sampled_from([0, 10, 50])))
        if draw(st.booleans()):
            p.label("app", "db")
        if draw(st.integers(0, 3)) == 0:
            p.cost(draw(st.sampled_from(["0", "2.5", "40"])))
        objs.append(p)
    if draw(st.booleans()):
        mode_all = draw(st.booleans())
        g = b.pod_group("vic", 1).priority(draw(st.sampled_from([0, 10])))
        if mode_all:
            g.disruption_all()
        objs.append(g)
        for j in range(draw(st.integers(1, 3))):
            objs.append(b.pod(f"vic-{j}").group("vic").on(draw(st.sampled_from(nodes))).cpu_m(draw(CPU)).label("app", "db"))
    if draw(st.booleans()):
        objs.append(b.pdb("db", draw(st.integers(0, 1)), app="db"))
    # pending workloads
    for w in range(draw(st.integers(1, 2))):
        prio = draw(st.sampled_from([20, 100]))
        kind = draw(st.sampled_from(["gang", "basic", "composite", "pod"]))
        name = f"w{w}"
        if kind == "pod":
            objs.append(b.pod(name).cpu_m(draw(CPU)).priority(prio))
            continue
        if kind in ("gang", "basic"):
            n_pods = draw(st.integers(1, 3))
            g = b.pod_group(name, draw(st.integers(1, n_pods + 1)) if kind == "gang" else None).priority(prio)
            if draw(st.booleans()):
                g.topology(b.RACK)
            if draw(st.integers(0, 3)) == 0:
                g.never_preempt()
            objs.append(g)
            cpu = draw(CPU)
            for j in range(n_pods):
                objs.append(b.pod(f"{name}-{j}").group(name).cpu_m(cpu))
            if draw(st.integers(0, 3)) == 0:
                objs.append(b.pod(f"{name}-run").group(name).on(nodes[0]).cpu_m(500))
            continue
        n_kids = draw(st.integers(1, 3))
        cg = b.composite(name, draw(st.integers(1, n_kids)) if draw(st.booleans()) else None).priority(prio)
        if draw(st.booleans()):
            cg.topology(b.ZONE)
        if draw(st.integers(0, 4)) == 0:
            cg.disruption_all()
        objs.append(cg)
        for k in range(n_kids):
            child = f"{name}-c{k}"
            n_pods = draw(st.integers(1, 2))
            g = b.pod_group(child, draw(st.integers(1, n_pods)) if draw(st.booleans()) else None).parent(name)
            if draw(st.booleans()):
                g.topology(b.RACK)
            objs.append(g)
            cpu = draw(CPU)
            for j in range(n_pods):
                pb = b.pod(f"{child}-{j}").group(child).cpu_m(cpu)
                if draw(st.integers(0, 5)) == 0:
                    pb.tolerate("dedicated", "x", "NoSchedule")
                objs.append(pb)
    return objs


@given(clusters())
def test_aggregated_model_matches_naive_model(objs: list[Any]) -> None:
    snap = b.snapshot(*objs)
    plan = api.plan(snap, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL"
    assert verify.verify(snap, plan) == []
    want = naive_tiers(snap)
    event(f"evicted pods: {min(plan.objective.evicted_pods, 3)}")
    event(f"satisfied workloads: {plan.objective.satisfied_workloads}/{len(plan.workloads)}")
    event(f"pdb violations: {min(plan.objective.pdb_violations, 1)}")
    event(f"composite satisfied: {any(w.kind == 'CompositePodGroup' and w.satisfied for w in plan.workloads)}")
    o = plan.objective
    have_levels = tuple((p, n) for p, n in sorted(o.satisfied_by_priority.items(), reverse=True))
    assert have_levels == want.satisfied_by_priority
    assert o.placed_pods == want.placed
    assert o.pdb_violations == want.pdb_violations
    assert round(o.preemption_cost * 1000) == want.cost_milli
    assert o.evicted_pods == want.evicted
    # one monolithic model gives the same tiers as the per-domain decomposition
    whole = api.plan(snap, api.PlanOptions(time_limit=60, decompose=False))
    assert whole.status == "OPTIMAL"
    assert whole.objective.key() == o.key()
    # the greedy baseline is a valid plan, never better than the optimum
    problem = build_problem(snap)
    base = make_plan(problem, greedy.baseline(problem), status="FEASIBLE", stats={})
    assert verify.verify(snap, base) == []
    assert base.objective.key() <= o.key()
