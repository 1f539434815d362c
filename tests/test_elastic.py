"""Elastic gangs (issue 50, item 16): ``--explain`` names the largest minCount that places a
pending gang now under the policy, proven, and what each larger size would take; the answer is
checked by placing the gang shrunk to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver import api, cli
from tests.builders import _Builder, admitted, node, pdb, pod, pod_group, snapshot


def _cluster(guarded: bool) -> list[_Builder]:
    """Three free nodes of 4 cpu and a fourth held by a low pod (a budget of 0 guards it when
    ``guarded``); a gang of 4 pods of 3 cpu, minCount 4: three fit on the free nodes, the fourth
    only where the low pod goes."""
    objs: list[_Builder] = [node(f"n{i}").cpu_m(4000) for i in range(4)]
    objs.append(pod("low").on("n3").cpu_m(2000).priority(1).label("app", "low"))
    if guarded:
        objs.append(pdb("keep", 0, app="low"))
    objs.append(pod_group("g", 4).priority(100))
    objs += [pod(f"g-{i}").group("g").cpu_m(3000) for i in range(4)]
    return objs


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_the_largest_min_count_that_fits_now_is_named_proven_and_places_the_shrunk_gang(policy: str) -> None:
    reading = snapshot(*_cluster(guarded=True))
    found = api.explain(reading, "default/g", api.PlanOptions(time_limit=10, pdb_policy=policy))
    if policy == "soft":  # the low pod may go: the whole gang fits
        assert found.satisfied and (found.min_count, found.largest_min_count, found.larger) == (4, 4, ())
        return
    assert not found.satisfied and (found.min_count, found.largest_min_count) == (4, 3)
    [four] = found.larger
    assert (four.min_count, four.satisfied, four.proven) == (4, False, True)
    assert [(b.budget, b.allowed, b.needed) for b in four.budgets] == [("default/keep", 0, 1)] and four.evictions == 1
    # the gang shrunk to 3 is placed, by a verified plan
    shrunk = api.plan(api._sized(reading, reading.group_by_key()["default/g"], 3),  # type: ignore[index]
                      api.PlanOptions(time_limit=10, pdb_policy=policy, workload="default/g"))
    assert shrunk.workloads[0].satisfied and len(shrunk.bindings) == 3 and not shrunk.evictions


def test_a_gang_that_fits_nowhere_has_none_and_every_size_proven_out(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    objs = [node("n0").cpu_m(2000), pod_group("g", 3).priority(100),
            *(pod(f"g-{i}").group("g").cpu_m(3000) for i in range(3))]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                "items": admitted([o.build() for o in objs])}))
    assert cli.main(["solve", str(path), "--explain", "default/g"]) == 0
    out = capsys.readouterr()
    found = json.loads(out.out)
    assert (found["minCount"], found["largestMinCount"]) == (3, 0)
    assert [(z["minCount"], z["satisfied"], z["proven"]) for z in found["larger"]] == \
        [(1, False, True), (2, False, True), (3, False, True)]
    assert "its gang's minCount is 3; the largest that places it now under --pdb-policy strict: none" in out.err


def test_a_workload_that_is_no_elastic_gang_has_no_sizes() -> None:
    reading = snapshot(node("n0").cpu_m(4000), pod_group("g", 1).priority(100), pod("g-0").group("g").cpu_m(1000))
    found = api.explain(reading, "default/g", api.PlanOptions(time_limit=5))
    assert found.min_count is None and "minCount" not in found.to_dict()


def test_a_min_count_far_above_the_groups_pods_plans_the_nearest_sizes_and_its_own_only() -> None:
    # minCount is any int32: sizes above the group's pod count cannot fit and are not planned
    reading = snapshot(node("n0").cpu_m(4000), pod_group("g", 1000).priority(100),
                       *(pod(f"g-{i}").group("g").cpu_m(1000) for i in range(4)))
    found = api.explain(reading, "default/g", api.PlanOptions(time_limit=5))
    assert (found.min_count, found.largest_min_count) == (1000, 4)
    assert [(z.min_count, z.satisfied, z.proven) for z in found.larger] == [(1000, False, True)]
    assert found.larger_omitted == 995 and found.to_dict()["largerOmitted"] == 995


@pytest.mark.parametrize("policy", ["strict", "soft"])
def test_explain_over_grpc_answers_what_the_process_answers(policy: str, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Explain, the gRPC twin of ``--explain``, on a real server on loopback: the same answer
    field by field (the elastic gang's sizes included), from the client and from ``gangplace
    solve --server ADDR --explain``; a request naming no workload, or one not in the snapshot,
    is refused as bad input."""
    from solver.core.errors import InputError
    from solver.service import client, server

    items = admitted([o.build() for o in _cluster(guarded=True)])
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}).encode()
    options = api.PlanOptions(time_limit=10, pdb_policy=policy)
    local = api.explain(snapshot(*_cluster(guarded=True)), "default/g", options)
    running = server.start(server.ServerConfig(address="127.0.0.1:0", metrics_address=None))
    try:
        with client.PlacementClient(f"127.0.0.1:{running.port}") as c:
            remote = c.explain(body, "default/g", options)
            assert remote == local
            assert (remote.largest_min_count, len(remote.larger)) == ((3, 1) if policy == "strict" else (4, 0))
            with pytest.raises(InputError, match="workload: Explain needs the workload"):
                c.explain(body, "", options)
            with pytest.raises(InputError, match="default/nowhere"):
                c.explain(body, "default/nowhere", options)
        path = tmp_path / "snap.json"
        path.write_bytes(body)
        assert cli.main(["solve", str(path), "--server", f"127.0.0.1:{running.port}", "--explain", "default/g",
                         "--pdb-policy", policy]) == 0
        assert json.loads(capsys.readouterr().out) == local.to_dict()
    finally:
        running.stop(5)


def test_a_placed_gang_is_told_how_far_it_can_grow_and_a_gang_that_runs_whole_that_it_needs_pods() -> None:
    """Item 16, running gangs: a gang a controller shrank to minCount 2, two pods running and
    three pending of 3 cpu beside them on a node of 8: it meets its minCount, and could meet 4
    now (two more fit), not 5 (proven); the gang grown to 4 is placed by a verified plan. A gang
    whose every pod runs has nothing to place: it meets what it runs, and is told a larger gang
    needs pods."""
    objs = [node("n0").cpu_m(8000), pod_group("g", 2).priority(100),
            *(pod(f"g-{i}").group("g").cpu_m(1000).on("n0") for i in range(2)),
            *(pod(f"g-{i}").group("g").cpu_m(3000) for i in range(2, 5))]
    reading = snapshot(*objs)
    found = api.explain(reading, "default/g", api.PlanOptions(time_limit=10))
    assert found.satisfied and (found.min_count, found.largest_min_count) == (2, 4)
    assert [(z.min_count, z.satisfied, z.proven) for z in found.larger] == [(5, False, True)]
    grown = api.plan(api._sized(reading, reading.group_by_key()["default/g"], 4),  # type: ignore[index]
                     api.PlanOptions(time_limit=10, workload="default/g"))
    assert grown.workloads[0].satisfied and len(grown.bindings) == 2
    whole = snapshot(node("n0").cpu_m(8000), pod_group("g", 2).priority(100),
                     *(pod(f"g-{i}").group("g").cpu_m(1000).on("n0") for i in range(3)), pod("other").cpu_m(100))
    ran = api.explain(whole, "default/g", api.PlanOptions(time_limit=10))
    assert (ran.satisfied, ran.min_count, ran.largest_min_count, ran.larger) == (True, 2, 3, ())
    assert ran.reason.startswith("every pod of it runs (3): a larger gang needs more pods")
