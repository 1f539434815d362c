"""Pods, PodGroups and CompositePodGroups are kinds apart: a pending or running pod may share
its namespace and name with a PodGroup, and neither is taken for the other, in the model,
the baseline, the verifier and over gRPC (issue 32, item 1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from solver import api, cli, reading, verify
from solver.service import client, server
from tests.builders import node, pod, pod_group

BOTH = pytest.mark.parametrize("baseline", [False, True], ids=["cp-sat", "baseline"])


def _snap(*objs: Any) -> Any:
    return reading.read([o.build() if hasattr(o, "build") else o for o in objs])


def _plan(snap: Any, **options: Any) -> Any:
    plan = api.plan(snap, api.PlanOptions(time_limit=10, **options))
    assert verify.verify(snap.facts, snap, plan) == []
    return plan


@BOTH
def test_a_pod_named_as_an_empty_pod_group_is_planned_as_itself(baseline: bool) -> None:
    snap = _snap(node("n1").cpu_m(4000), pod_group("x", 1), pod("x").cpu_m(1000))
    plan = _plan(snap, baseline_only=baseline)
    assert [(b.pod, b.node) for b in plan.bindings] == [("default/x", "n1")]
    assert [(w.name, w.kind, w.satisfied) for w in plan.workloads] == [("default/x", "Pod", True)]


@BOTH
def test_a_pod_and_a_pod_group_of_one_name_are_two_workloads(baseline: bool) -> None:
    snap = _snap(node("n1").cpu_m(4000), pod_group("x", 1).priority(10), pod("x-0").group("x").priority(10).cpu_m(1000),
                 pod("x").cpu_m(1000))
    plan = _plan(snap, baseline_only=baseline)
    assert sorted(b.pod for b in plan.bindings) == ["default/x", "default/x-0"]
    assert sorted((w.name, w.kind, w.satisfied) for w in plan.workloads) == [
        ("default/x", "Pod", True), ("default/x", "PodGroup", True)]
    # --workload names the group when both exist
    alone = api.plan(snap, api.PlanOptions(time_limit=10, workload="default/x", baseline_only=baseline))
    assert [(w.kind, [b.pod for b in alone.bindings]) for w in alone.workloads] == [("PodGroup", ["default/x-0"])]


@BOTH
def test_a_running_pod_is_no_member_of_the_planned_group_that_shares_its_name(baseline: bool) -> None:
    """Running x (priority 0) holds the room gang x (priority 100) needs: it is a victim like
    any other, not a protected member of the workload being planned."""
    snap = _snap(node("n1").cpu_m(4000), pod("x").on("n1").cpu_m(3000),
                 pod_group("x", 1).priority(100), pod("x-0").group("x").priority(100).cpu_m(3000))
    plan = _plan(snap, baseline_only=baseline)
    assert [b.pod for b in plan.bindings] == ["default/x-0"] and [e.pod for e in plan.evictions] == ["default/x"]


def test_names_in_other_namespaces_never_meet() -> None:
    other = pod("x").cpu_m(1000)
    other.obj["metadata"]["namespace"] = "team-b"
    snap = _snap(node("n1").cpu_m(4000), pod_group("x", 1), pod("x-0").group("x").cpu_m(1000), other)
    assert sorted(b.pod for b in _plan(snap).bindings) == ["default/x-0", "team-b/x"]


def test_over_grpc_and_the_cli_the_same(tmp_path: Any) -> None:
    objs = [node("n1").cpu_m(4000).build(), pod_group("x", 1).build(), pod("x").cpu_m(1000).build()]
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}).encode()
    running = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None))
    try:
        with client.PlacementClient(f"127.0.0.1:{running.port}") as c:
            remote = c.solve(body)
    finally:
        running.stop(5)
    assert [b.pod for b in remote.bindings] == ["default/x"]
    path = tmp_path / "s.json"
    path.write_bytes(body)
    assert cli.main(["solve", str(path), "-o", str(tmp_path / "plan.json")]) == 0
    assert [b["pod"] for b in json.loads((tmp_path / "plan.json").read_text())["bindings"]] == ["default/x"]


@BOTH
def test_a_pod_group_and_a_composite_of_one_name_are_two_groups(baseline: bool) -> None:
    """Issue 50, item 14: the API keeps PodGroups and CompositePodGroups apart, so one of each
    may share a name; a CompositePodGroup's key carries its kind (``s.group_key``)."""
    from tests.builders import composite

    snap = _snap(node("n1").cpu_m(4000), composite("x", 1), pod_group("x", 2).parent("x"),
                 pod("x-0").group("x").cpu_m(1000), pod("x-1").group("x").cpu_m(1000))
    assert {(g.key, g.kind, g.parent) for g in snap.groups} == {
        ("CompositePodGroup/default/x", "CompositePodGroup", None),
        ("default/x", "PodGroup", "CompositePodGroup/default/x")}
    plan = _plan(snap, baseline_only=baseline)
    (w,) = plan.workloads
    assert (w.name, w.kind, w.satisfied) == ("CompositePodGroup/default/x", "CompositePodGroup", True)
    assert [(g.name, g.kind, g.placed_pods) for g in w.groups] == [
        ("CompositePodGroup/default/x", "CompositePodGroup", 2), ("default/x", "PodGroup", 2)]
    assert sorted(b.pod for b in plan.bindings) == ["default/x-0", "default/x-1"]


def test_a_pod_names_a_pod_group_and_a_parent_names_a_composite_never_the_other_kind() -> None:
    """A pod whose podGroupName only a CompositePodGroup has waits for its PodGroup, and a group
    whose parent only a PodGroup is named after waits for its CompositePodGroup, as upstream
    holds them at PreEnqueue (before item 14 both were refused as malformed)."""
    from tests.builders import composite

    snap = _snap(node("n1").cpu_m(4000), composite("c", 1), pod("p").group("c").cpu_m(1000),
                 pod_group("a", 1), pod("a-0").group("a").cpu_m(1000),
                 pod_group("b", 1).parent("a"), pod("b-0").group("b").cpu_m(1000))
    assert {w.pod: w.reason for w in snap.waiting} == {
        "default/p": "PodGroup default/c not found: waiting for the pod's pod group to appear in the scheduling queue",
        "default/b-0": ("CompositePodGroup/default/a not found: waiting for the parent of PodGroup/default/b "
                        "to appear"),
    }
    assert [b.pod for b in _plan(snap).bindings] == ["default/a-0"]
