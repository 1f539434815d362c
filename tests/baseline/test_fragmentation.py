"""Expected pods (``PlanOptions.expected``, docs/fragmentation.md): the hint places each pod
where it fragments the devices least for them.

The clusters are the FGD bench's (solver.bench.fgd: GPUs as metered DRA devices, what runs
as one pod per node holding shares), so the fragmentation the model works out is checked
against the bench's own statement of the paper's measure (``fgd.node_frag``), which shares
no code with it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from solver import api, cli, reading
from solver.baseline import fragment
from solver.baseline.fragment import score, tie_order
from solver.baseline.state import State
from solver.bench import fgd
from solver.core.errors import SnapshotInvalidError
from solver.kube import expected as kexpected
from solver.problem.build import build_problem

MODELS = ("A", "B")


def _cluster(gpus: list[int], cpu: int = 16000) -> fgd.Cluster:
    return fgd.Cluster.of([fgd.GpuNode(name=f"n{i}", cpu_milli=cpu, memory_mib=65536, gpus=g, model=MODELS[i % 2])
                           for i, g in enumerate(gpus)])


def _mix(tasks: list[fgd.Task]) -> tuple[list[fgd.Typical], tuple[object, ...]]:
    shapes = fgd.typical(tasks, popularity=1.0)
    return shapes, fgd.expected_pods(shapes)


def _placed(cluster: fgd.Cluster, task: fgd.Task, expected: tuple[object, ...], seed: int = 0
            ) -> tuple[str, list[int]]:
    objs, _ = fgd.objects(cluster, [("t", task)])
    return fgd.planner(expected=expected, seed=seed)(objs)["t"]  # type: ignore[arg-type]  # ExpectedPods


@pytest.mark.parametrize("cache", [fragment.CACHE_SIZE, 2])
def test_the_models_fragmentation_is_the_papers_measure_on_random_states(
        cache: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random tasks on random nodes (cpu too, so some shapes stop fitting), then every node's
    fragmentation from the snapshot, in devices, against fgd.node_frag in milli. Also with a
    memory of two type states, dropped again and again while nodes are read."""
    monkeypatch.setattr(fragment, "CACHE_SIZE", cache)
    monkeypatch.setattr(fragment, "_memories", {})
    rng = random.Random(7)
    tasks = [fgd.Task(name=f"k{i}", cpu_milli=rng.choice([1000, 4000, 9000]), memory_mib=1,
                      num_gpu=g, gpu_milli=m, spec=rng.choice([(), ("A",), ("B",)]))
             for i, (g, m) in enumerate([(1, 250), (1, 500), (1, 700), (1, 1000), (2, 1000), (0, 0)] * 2)]
    shapes, mix = _mix(tasks)
    checked = 0
    for trial in range(6):
        cluster = _cluster([1, 2, 4, 8, 2, 4], cpu=24000)
        for _ in range(rng.randrange(4, 14)):
            t = rng.choice(tasks)
            fit = [st for st in cluster.nodes if cluster.may_fit(st, t)]
            if fit:
                st = rng.choice(fit)
                room = [g for g, f in enumerate(st.free) if f >= t.gpu_milli][:t.num_gpu] if t.num_gpu else []
                cluster.place(f"q{len(cluster.where)}", st.node.name, t, room)
        probe = fgd.Task(name="p", cpu_milli=1, memory_mib=1, num_gpu=0, gpu_milli=0)
        objs, _ = fgd.objects(cluster, [(f"p{i}", probe) for i in range(len(cluster.nodes))])
        state = State(build_problem(reading.read(objs), expected=mix))  # type: ignore[arg-type]
        frag = state.frag
        assert frag is not None
        for st in cluster.nodes:
            mine = frag.of(frag.node_state(st.node.name, state.free_requests(st.node.name, frag.resources)))
            assert mine * 1000 == pytest.approx(fgd.node_frag(st, shapes), abs=1e-6), (trial, st)
            checked += 1
    assert checked == 36


def test_a_pod_goes_where_the_expected_pods_can_still_use_what_is_left() -> None:
    """Node n0 (model A) has a GPU with 600 milli left, n2 (also A) a fresh one. A 400 packed
    best fit goes on n0 and leaves 200 no expected 600 can use; with the 600s expected it goes
    on n2, whose 600 left they can. Without expected pods the hint packs as before."""
    cluster = _cluster([1, 1, 1])
    cluster.place("x", "n0", fgd.Task(name="x", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=400), [0])
    task = fgd.Task(name="t", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=400, spec=("A",))
    _, mix = _mix([fgd.Task(name="e", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=600)])
    assert _placed(cluster, task, ()) == ("n0", [0])
    assert _placed(cluster, task, mix) == ("n2", [0])


def test_a_share_goes_on_the_device_that_leaves_room_the_expected_pods_can_use() -> None:
    """One node, GPU 0 with 600 left, GPU 1 fresh: a 400 best fit takes GPU 0 (200 left, of
    no use to a 600); expecting 600s it takes GPU 1 (600 left on each)."""
    cluster = _cluster([2])
    cluster.place("x", "n0", fgd.Task(name="x", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=400), [0])
    task = fgd.Task(name="t", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=400)
    _, mix = _mix([fgd.Task(name="e", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=600)])
    assert _placed(cluster, task, ()) == ("n0", [0])
    assert _placed(cluster, task, mix) == ("n0", [1])


def test_equal_scores_go_in_the_seeds_node_order() -> None:
    """Six empty alike nodes of model A: every choice scores the same, so the node is the
    first in the seed's order; over a few seeds more than one node is chosen."""
    cluster = fgd.Cluster.of([fgd.GpuNode(name=f"m{i}", cpu_milli=8000, memory_mib=8192, gpus=1, model="A")
                              for i in range(6)])
    task = fgd.Task(name="t", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=500)
    _, mix = _mix([task])
    chosen = set()
    for seed in range(8):
        # every node in the snapshot (one per pending task), then only task t kept
        objs = [o for o in fgd.objects(cluster, [(f"t{i}", task) for i in range(6)])[0]
                if o["kind"] != "Pod" or o["metadata"]["name"] == "t0"]  # the tasks share one template
        node = fgd.planner(expected=mix, seed=seed)(objs)["t0"][0]  # type: ignore[arg-type]  # ExpectedPods
        assert node == min((st.node.name for st in cluster.nodes), key=lambda n: tie_order(seed, n))
        chosen.add(node)
    assert len(chosen) > 1


def test_among_equal_scores_a_node_in_use_goes_before_an_empty_one() -> None:
    """n0 runs a share of 500, n1 is empty, both with cpu to spare: a CPU-only pod changes
    neither node's fragmentation for the 500s expected, so the scores tie; it goes on n0 for
    every seed, though the seed's order alone puts n1 first for some."""
    cluster = fgd.Cluster.of([fgd.GpuNode(name=f"n{i}", cpu_milli=64000, memory_mib=65536, gpus=1, model="A")
                              for i in range(2)])
    cluster.place("x", "n0", fgd.Task(name="x", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=500), [0])
    task = fgd.Task(name="t", cpu_milli=1000, memory_mib=1, num_gpu=0, gpu_milli=0)
    _, mix = _mix([fgd.Task(name="e", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=500)])
    assert {_placed(cluster, task, mix, seed)[0] for seed in range(8)} == {"n0"}
    assert any(tie_order(seed, "n1") < tie_order(seed, "n0") for seed in range(8))


def test_the_memory_drops_values_with_the_numbers_they_were_keyed_by(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fragment, "CACHE_SIZE", 2)
    memory = fragment._Memory()
    a, b, c = (((True,), (), (), False, n) for n in (1, 2, 3))
    key = ((), memory.numbered([a]))
    memory.values[key] = 1.0
    assert memory.numbered([b, c]) == (0, 1)  # a full memory starts again: b is 0 now
    assert key not in memory.values and memory.types == [b, c]


def test_the_score_is_coarse_and_centred_on_no_change() -> None:
    assert score(1.0, 1.0) == 50
    assert score(1.0, 1.02) == 49 and score(1.0, 1.01) == 49  # int(): under 50 as soon as it grows
    assert score(1.0, 0.99) == 50  # a gain under 0.04 of a device is no gain
    assert score(0.0, 100.0) == 0 and score(100.0, 0.0) == 100


# ---- the input ------------------------------------------------------------------------------

def test_expected_pods_read_back_from_their_document() -> None:
    doc = [{"name": "half", "weight": 3, "requests": {"cpu": "4", "memory": "8Gi"},
            "device": {"deviceClassName": "gpu", "count": 2, "capacity": {"requests": {"milli": "500"}},
                       "selectors": [{"cel": {"expression": 'device.attributes["x"].model == "A"'}}]}},
           {"weight": 1, "requests": {"cpu": "500m"}}]
    pods = kexpected.expected_pods([doc])
    assert [(p.name, p.weight, p.requests) for p in pods] == [
        ("half", 3.0, (("cpu", 4000), ("memory", 8 * 2**30))), ("expected[1]", 1.0, (("cpu", 500),))]
    assert pods[0].device is not None and pods[0].device.capacity == (("milli", 500_000),)
    assert pods[0].device.count == 2 and pods[1].device is None
    assert kexpected.expected_pods([kexpected.document(pods)]) == pods
    assert kexpected.expected_pods([{"expectedPods": doc}]) == pods


@pytest.mark.parametrize(("entry", "message"), [
    ({"requests": {}}, "ExpectedPod/expected[0]: weight: must be a number above 0"),
    ({"weight": -1}, "weight: must be a number above 0"),
    ({"weight": float("nan")}, "weight: must be a number above 0"),
    ({"weight": 1, "cpu": 1}, "ExpectedPod/expected[0]: cpu: unknown field"),
    ({"name": "x", "weight": 1, "requests": {"cpu": "lots"}}, "ExpectedPod/x: requests[cpu]: unparsable quantity"),
    ({"weight": 1, "device": {"count": 1}}, "device.deviceClassName: missing"),
    ({"weight": 1, "device": {"deviceClassName": "gpu", "count": 0}}, "device.count"),
    ({"weight": 1, "device": {"deviceClassName": "gpu", "allocationMode": "All"}}, "only ExactCount"),
    ({"weight": 1, "device": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": "device.("}}]}},
     "device.selectors[0].cel.expression: CEL"),
])
def test_a_bad_expected_pod_is_refused_naming_it_and_the_field(entry: dict[str, object], message: str) -> None:
    with pytest.raises(SnapshotInvalidError, match=message.replace("[", r"\[").replace("]", r"\]")):
        kexpected.expected_pods([[entry]])


def test_an_unknown_device_class_is_refused_when_the_devices_are_read() -> None:
    cluster = _cluster([1])
    objs, _ = fgd.objects(cluster, [("t", fgd.Task(name="t", cpu_milli=1, memory_mib=1, num_gpu=1, gpu_milli=500))])
    pods = kexpected.expected_pods([[{"name": "e", "weight": 1, "device": {"deviceClassName": "nope"}}]])
    with pytest.raises(SnapshotInvalidError, match=r"expected pod e: device\.deviceClassName: DeviceClass 'nope' not found"):
        api.plan(reading.read(objs), api.PlanOptions(expected=pods))
    with pytest.raises(api.OptionError, match=r"expected\[0\].weight"):
        api.PlanOptions(expected=(pods[0].__class__(name="e", weight=0.0),))


def test_solve_expected_pods_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gangplace solve --expected-pods FILE``: the plan of the test above; a bad file is one line."""
    cluster = _cluster([1, 1, 1])
    cluster.place("x", "n0", fgd.Task(name="x", cpu_milli=1000, memory_mib=1, num_gpu=1, gpu_milli=400), [0])
    objs, _ = fgd.objects(cluster, [("t", fgd.Task(name="t", cpu_milli=1000, memory_mib=1, num_gpu=1,
                                                   gpu_milli=400, spec=("A",)))])
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps({"kind": "List", "items": objs}))
    mix = tmp_path / "expected.yaml"
    mix.write_text("- weight: 1\n  requests: {cpu: '1'}\n  device: {deviceClassName: openb-gpu, capacity: "
                   "{requests: {milli: '600'}}}\n")
    out = tmp_path / "plan.json"
    assert cli.main(["solve", str(snap), "--expected-pods", str(mix), "-o", str(out)]) == 0
    assert [b["node"] for b in json.loads(out.read_text())["bindings"]] == ["n2"]
    assert cli.main(["solve", str(snap), "-o", str(out)]) == 0
    assert [b["node"] for b in json.loads(out.read_text())["bindings"]] == ["n0"]
    mix.write_text("- weight: 0\n")
    capsys.readouterr()
    assert cli.main(["solve", str(snap), "--expected-pods", str(mix)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ExpectedPod/expected[0]: weight" in err[0]
