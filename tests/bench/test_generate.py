"""The synthetic snapshot generator is deterministic and its snapshots plan and verify."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from solver import api, cli, kube, verify
from solver.bench.generate import GenerateSpec, generate

SMALL = GenerateSpec(nodes=64, pods_per_node=4, nodes_per_rack=8, racks_per_block=2, blocks_per_zone=2,
                     gang_pods=8, seed=3)


def test_same_seed_same_snapshot_other_seed_other_snapshot() -> None:
    assert json.dumps(generate(SMALL)) == json.dumps(generate(SMALL))
    assert json.dumps(generate(replace(SMALL, seed=4))) != json.dumps(generate(SMALL))


def test_generated_snapshot_places_the_gang_in_one_rack_optimally() -> None:
    snap = kube.snapshot_from_objects(generate(SMALL))
    plan = api.plan(snap, api.PlanOptions(time_limit=60))
    assert plan.status == "OPTIMAL"
    assert verify.verify(snap, plan) == []
    assert plan.objective.satisfied_workloads == 1 and plan.objective.placed_pods == 8
    assert len({b.node for b in plan.bindings}) >= 1
    assert list(plan.workloads[0].groups[0].domain) == ["topology.kubernetes.io/rack"]


def test_generate_command_writes_a_json_list(tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    assert cli.main(["generate", "--nodes", "32", "--gang-pods", "4", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["kind"] == "List"
    assert sum(1 for o in data["items"] if o["kind"] == "Node") == 32
