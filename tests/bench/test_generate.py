"""The synthetic snapshot generator is deterministic and its snapshots plan and verify."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from solver import api, cli, reading, verify
from solver.bench import runner
from solver.bench.generate import GenerateSpec, contention, gang_scheduling, generate, podgroup_preemption

SMALL = GenerateSpec(nodes=64, pods_per_node=4, nodes_per_rack=8, racks_per_block=2, blocks_per_zone=2,
                     gang_pods=8, seed=3)


def test_same_seed_same_snapshot_other_seed_other_snapshot() -> None:
    assert json.dumps(generate(SMALL)) == json.dumps(generate(SMALL))
    assert json.dumps(generate(replace(SMALL, seed=4))) != json.dumps(generate(SMALL))


def test_generated_snapshot_places_the_gang_in_one_rack_optimally() -> None:
    snap = reading.read(generate(SMALL))
    plan = api.plan(snap, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL"
    assert verify.verify(snap.facts, snap, plan) == []
    assert plan.objective.satisfied_workloads == 1 and plan.objective.placed_pods == 8
    assert len({b.node for b in plan.bindings}) >= 1
    assert list(plan.workloads[0].groups[0].domain) == ["topology.kubernetes.io/rack"]


def test_generate_command_writes_a_json_list(tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    assert cli.main(["generate", "--nodes", "32", "--gang-pods", "4", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kind"] == "List"
    assert sum(1 for o in data["items"] if o["kind"] == "Node") == 32


def test_the_recorded_mini_suite_is_what_its_builders_write_today() -> None:
    data = Path(__file__).resolve().parent.parent / "data" / "bench"
    cases = runner.SUITES["mini"]
    assert sorted(p.stem for p in data.glob("*.json")) == sorted(name for name, _ in cases)
    for name, build in cases:
        recorded = json.loads((data / f"{name}.json").read_text())
        assert recorded == {"apiVersion": "v1", "kind": "List", "items": build()}, (
            f"{name}: regenerate with `gangplace generate --suite mini -o tests/data/bench`")


def test_gang_scheduling_shape_is_gangs_of_three_on_empty_nodes() -> None:
    snap = reading.read(gang_scheduling(nodes=10, gangs=4, size=3))
    assert len(snap.nodes) == 10 and all(n.allocatable["cpu"] == 4000 for n in snap.nodes)
    assert all(p.node is None for p in snap.pods) and len(snap.pods) == 12
    assert sorted((g.key, g.min_count) for g in snap.groups) == [(f"bench/gang-{i:04d}", 3) for i in range(4)]


def test_podgroup_preemption_shape_fills_every_node_with_victim_groups() -> None:
    snap = reading.read(podgroup_preemption(nodes=5, groups=5, group_size=2, mode="all", preemptors=2))
    running = [p for p in snap.pods if p.node is not None]
    # group g runs on nodes g and g+1 (mod 5): each node holds 2 pods of 2 cpu, full
    assert sorted((p.group.split("/")[1], p.node) for p in running if p.group)[:4] == [
        ("victims-0000", "node-00000"), ("victims-0000", "node-00001"),
        ("victims-0001", "node-00001"), ("victims-0001", "node-00002")]
    assert all(p.requests["cpu"] == 2000 for p in running)
    assert all(g.disruption_all for g in snap.groups if g.key.startswith("bench/victims"))
    single = reading.read(podgroup_preemption(nodes=5, groups=5, group_size=2, mode="single"))
    assert not any(g.disruption_all for g in single.groups)
    with pytest.raises(ValueError, match="mode must be"):
        podgroup_preemption(mode="some")


def test_contention_asks_130_percent_of_what_can_fit_in_many_gangs() -> None:
    objs = contention(nodes=256, workloads=30, seed=2)
    assert json.dumps(objs) == json.dumps(contention(nodes=256, workloads=30, seed=2))
    snap = reading.read(objs)
    pending = [p for p in snap.pods if p.node is None]
    cpu = sum(n.allocatable["cpu"] for n in snap.nodes)
    free = cpu - sum(p.requests["cpu"] for p in snap.pods if p.node)
    assert 0.68 <= 1 - free / cpu <= 0.75
    # what can fit: free, or held by a pod the strongest pending priority (10,000) may preempt
    fits = cpu - sum(p.requests["cpu"] for p in snap.pods if p.node and p.priority >= 10000)
    asked = sum(p.requests["cpu"] for p in pending)
    assert 1.25 <= asked / fits <= 1.3  # rounded down to 100m a pod
    groups = {g.key: g for g in snap.groups}
    roots = {g.key for g in snap.groups
             if g.key.removeprefix("CompositePodGroup/").startswith("bench/job-") and g.parent is None}
    assert len(roots) == 30
    assert {groups[r].kind for r in roots} == {"PodGroup", "CompositePodGroup"}
    assert {groups[r].priority for r in roots} == {100, 1000, 10000}
    for key in roots:
        g = groups[key]
        leaves = [c for c in snap.groups if c.parent == key] if g.kind == "CompositePodGroup" else [g]
        assert g.topology_key == ("topology.kubernetes.io/block" if g.kind == "CompositePodGroup" or
                                  g.min_count > 64 else "topology.kubernetes.io/rack")
        for leaf in leaves:  # whole gangs
            assert leaf.min_count == sum(1 for p in pending if p.group == leaf.key)
    assert any(g.disruption_all for g in snap.groups)  # victims evicted whole
