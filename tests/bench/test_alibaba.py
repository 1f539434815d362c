"""The Alibaba GPU trace converter, on small inline CSV fixtures (the trace itself is never copied here)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from solver import api, reading, verify
from solver.bench.alibaba import (
    GPU_COUNT,
    GPU_MILLI,
    GPU_MODEL,
    HOST,
    RACK,
    ZONE,
    AlibabaSpec,
    Converted,
    convert,
    load_trace,
    parse_csv,
)

NODES_CSV = """\
sn,cpu_milli,memory_mib,gpu,model
n0,32000,262144,0,
n1,96000,393216,8,G2
n2,64000,262144,2,T4
n3,64000,262144,1,V100M16
n4,96000,393216,8,G2
"""

# at = 100. Running at 100: p-cpu, p-frac, p-multi (Succeeded since), p-v100 (fits nowhere), p-edge
# (created exactly at 100). Not running: p-done (deleted at 100), p-pend (never ran), p-late (later).
# Gang candidates (whole GPU, created after 100): g1 (150), g3 and g4 (170, by name), g5 (300);
# g2 is fractional and p-late has no GPU.
PODS_CSV = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
p-done,1000,1024,0,0,,BE,Succeeded,5,100,5
p-cpu,4000,8192,0,0,,BE,Running,10,1000,10
p-pend,1000,1024,1,1000,,BE,Pending,12,500,
p-frac,6000,12288,1,460,,LS,Running,20,1000,21
p-multi,16000,65536,8,1000,V100M32|G2,Burstable,Succeeded,30,1000,31
p-v100,8000,16384,2,1000,V100M16,Guaranteed,Failed,40,1000,40
p-edge,2000,4096,0,0,,BE,Running,100,1000,100
g1,8000,32768,1,1000,,LS,Running,150,900,150
g2,4000,8192,1,500,,LS,Running,160,900,160
g4,8000,32768,1,1000,,BE,Pending,170,900,
g3,32000,131072,8,1000,G2,LS,Running,170,900,171
p-late,1000,1024,0,0,,BE,Running,200,900,200
g5,8000,32768,1,1000,,LS,Running,300,900,300
"""

SPEC = AlibabaSpec(at=100, gang_pods=3, rack_size=2, racks_per_zone=2)


def _convert(spec: AlibabaSpec = SPEC, pods: str = PODS_CSV) -> Converted:
    return convert(parse_csv(NODES_CSV, "nodes.csv"), parse_csv(pods, "pods.csv"), spec)


def _objects(conv: Converted, kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in conv.objects if o["kind"] == kind}


def test_node_labels_and_allocatable() -> None:
    nodes = _objects(_convert(), "Node")
    assert list(nodes) == ["n0", "n1", "n2", "n3", "n4"]
    assert nodes["n3"]["metadata"]["labels"] == {ZONE: "z0", RACK: "z0-r1", HOST: "n3", GPU_MODEL: "V100M16"}
    assert nodes["n3"]["status"]["allocatable"] == {"cpu": "64000m", "memory": "262144Mi", "pods": "110",
                                                    GPU_COUNT: "1", GPU_MILLI: "1000"}
    assert nodes["n0"]["metadata"]["labels"] == {ZONE: "z0", RACK: "z0-r0", HOST: "n0"}
    assert nodes["n0"]["status"]["allocatable"] == {"cpu": "32000m", "memory": "262144Mi", "pods": "110"}
    assert nodes["n4"]["metadata"]["labels"][RACK] == "z1-r2" and nodes["n4"]["metadata"]["labels"][ZONE] == "z1"
    assert list(_objects(_convert(replace(SPEC, max_nodes=2)), "Node")) == ["n0", "n1"]


def test_priority_classes_are_emitted() -> None:
    classes = {n: o["value"] for n, o in _objects(_convert(), "PriorityClass").items()}
    assert classes == {"trace-guaranteed": 1000, "trace-ls": 500, "trace-burstable": 100, "trace-be": 10}


def test_fractional_and_multi_gpu_pod_requests_and_affinity() -> None:
    pods = _objects(_convert(), "Pod")
    frac, multi = pods["p-frac"]["spec"], pods["p-multi"]["spec"]
    assert frac["containers"][0]["resources"]["requests"] == {"cpu": "6000m", "memory": "12288Mi", GPU_MILLI: "460"}
    assert "affinity" not in frac
    assert frac["priorityClassName"] == "trace-ls"
    assert multi["containers"][0]["resources"]["requests"] == {"cpu": "16000m", "memory": "65536Mi",
                                                               GPU_MILLI: "8000", GPU_COUNT: "8"}
    assert multi["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_MODEL, "operator": "In",
                                                     "values": ["V100M32", "G2"]}]}]}}}
    assert multi["priorityClassName"] == "trace-burstable"
    assert pods["p-cpu"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4000m", "memory": "8192Mi"}
    assert pods["p-frac"]["status"] == {"phase": "Running", "startTime": "2023-01-01T00:00:21Z"}


def test_running_background_at_a_time_by_first_fit() -> None:
    conv = _convert()
    assert conv.at == 100
    # p-frac: n0 has no GPU -> n1. p-multi: n1 has 8000 - 460 milli left, not 8000 -> n4.
    # p-v100 wants two V100M16 GPUs: n3 has one -> nowhere.
    assert conv.running == (("p-cpu", "n0"), ("p-frac", "n1"), ("p-multi", "n4"), ("p-edge", "n0"))
    assert conv.unplaced_background == 1
    pods = _objects(conv, "Pod")
    assert {n: p["spec"].get("nodeName") for n, p in pods.items() if p["spec"].get("nodeName")} == dict(conv.running)
    assert "p-v100" not in pods and "p-done" not in pods and "p-pend" not in pods and "p-late" not in pods


def test_unplaced_count_grows_when_nodes_run_out() -> None:
    conv = _convert(replace(SPEC, max_nodes=1))  # only n0, the CPU node: every GPU task fits nowhere
    assert conv.running == (("p-cpu", "n0"), ("p-edge", "n0"))
    assert conv.unplaced_background == 3


def test_pending_gang_members() -> None:
    conv = _convert()
    assert conv.pending == ("g1", "g3", "g4")
    group = _objects(conv, "PodGroup")["trace-gang"]
    assert group["apiVersion"] == "scheduling.k8s.io/v1beta1" and group["metadata"]["namespace"] == "trace"
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}, "priorityClassName": "trace-guaranteed",
                             "schedulingConstraints": {"topology": [{"key": ZONE}]}}
    pods = _objects(conv, "Pod")
    for name in conv.pending:
        assert pods[name]["spec"]["schedulingGroup"] == {"podGroupName": "trace-gang"}
        assert pods[name]["spec"]["priorityClassName"] == "trace-guaranteed"
        assert "nodeName" not in pods[name]["spec"] and pods[name]["status"] == {"phase": "Pending"}
    assert pods["g3"]["spec"]["containers"][0]["resources"]["requests"][GPU_COUNT] == "8"

    rack = _objects(_convert(replace(SPEC, gang_topology=RACK)), "PodGroup")["trace-gang"]
    assert rack["spec"]["schedulingConstraints"] == {"topology": [{"key": RACK}]}
    bare = _objects(_convert(replace(SPEC, gang_topology=None)), "PodGroup")["trace-gang"]
    assert "schedulingConstraints" not in bare["spec"]
    assert _convert(replace(SPEC, gang_pods=10)).pending == ("g1", "g3", "g4", "g5")  # the trace runs out


def test_no_gang() -> None:
    conv = _convert(replace(SPEC, gang_pods=0))
    assert conv.pending == () and not _objects(conv, "PodGroup")
    assert all(o["spec"].get("nodeName") for o in conv.objects if o["kind"] == "Pod")


def test_default_time_is_the_lower_median_creation_time() -> None:
    # creation times 5 10 12 20 30 40 100 150 160 170 170 200 300: the median is 100
    assert _convert(replace(SPEC, at=None)).at == 100
    early = _convert(replace(SPEC, at=25))
    assert early.running == (("p-done", "n0"), ("p-cpu", "n0"), ("p-frac", "n1"))
    assert early.pending == ("p-multi", "p-v100", "g1")


def test_deterministic_and_independent_of_row_order() -> None:
    first = json.dumps(_convert().objects)
    assert json.dumps(_convert().objects) == first
    header, *rows = PODS_CSV.splitlines()
    shuffled = "\n".join([header, *reversed(rows)]) + "\n"
    assert json.dumps(_convert(pods=shuffled).objects) == first


def test_five_column_files_have_no_background() -> None:
    pods = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
a,1000,1024,1,500
b,8000,16384,8,1000
c,1000,1024,0,0
d,4000,8192,1,1000
"""
    conv = convert(parse_csv(NODES_CSV, "nodes.csv"), parse_csv(pods, "multi.csv"), replace(SPEC, at=None))
    assert conv.at is None and conv.running == () and conv.unplaced_background == 0
    assert conv.pending == ("b", "d")
    with pytest.raises(ValueError, match=r"multi\.csv: no creation_time column"):
        convert(parse_csv(NODES_CSV, "nodes.csv"), parse_csv(pods, "multi.csv"), SPEC)


def test_plain_mappings_work_too() -> None:
    nodes = [{"sn": "n0", "cpu_milli": "4000", "memory_mib": "1024", "gpu": "1", "model": "T4"}]
    pods = [{"name": "a", "cpu_milli": "1000", "memory_mib": "512", "num_gpu": "1", "gpu_milli": "1000"}]
    assert convert(nodes, pods, AlibabaSpec(gang_pods=1)).pending == ("a",)
    with pytest.raises(ValueError, match=r"^nodes row 2: gpu: '1\.5' is not an integer$"):
        convert([{**nodes[0], "gpu": "1.5"}], pods)


def test_bad_input_names_the_file_row() -> None:
    lines = PODS_CSV.splitlines()
    lines[3] = lines[3].replace("p-pend,1000", "p-pend,x")  # file row 4
    with pytest.raises(ValueError, match=r"^openb_pod_list_default\.csv row 4: cpu_milli: 'x' is not an integer$"):
        convert(parse_csv(NODES_CSV, "nodes.csv"), parse_csv("\n".join(lines), "openb_pod_list_default.csv"), SPEC)
    lines = PODS_CSV.splitlines()
    lines[2] = lines[2].replace(",BE,", ",Spot,")
    with pytest.raises(ValueError, match=r"pods\.csv row 3: qos: 'Spot' is not one of Guaranteed, LS, Burstable, BE"):
        convert(parse_csv(NODES_CSV, "nodes.csv"), parse_csv("\n".join(lines), "pods.csv"), SPEC)
    with pytest.raises(ValueError, match=r"^nodes\.csv row 1: missing column 'gpu'$"):
        convert(parse_csv("sn,cpu_milli,memory_mib,model\nn0,1,1,\n", "nodes.csv"), parse_csv(PODS_CSV, "p.csv"))
    with pytest.raises(ValueError, match=r"^nodes\.csv row 3: memory_mib: '-5' is negative$"):
        convert(parse_csv(NODES_CSV.replace("n1,96000,393216", "n1,96000,-5"), "nodes.csv"),
                parse_csv(PODS_CSV, "p.csv"))
    with pytest.raises(ValueError, match=r"^p\.csv row 2: 3 fields, the header has 11$"):
        parse_csv(PODS_CSV.splitlines()[0] + "\na,1,2\n", "p.csv")
    with pytest.raises(ValueError, match="rack_size"):
        AlibabaSpec(rack_size=0)


def test_load_trace_reads_the_csv_files(tmp_path: Path) -> None:
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "openb_node_list_all_node.csv").write_text(NODES_CSV)
    (tmp_path / "csv" / "openb_pod_list_default.csv").write_text(PODS_CSV)
    nodes, pods = load_trace(tmp_path)
    assert nodes.source == "openb_node_list_all_node.csv" and pods.source == "openb_pod_list_default.csv"
    assert json.dumps(convert(nodes, pods, SPEC).objects) == json.dumps(_convert().objects)
    (tmp_path / "csv" / "mine.csv").write_text(PODS_CSV.replace("p-cpu,4000", "p-cpu,4k"))
    with pytest.raises(ValueError, match=r"^mine\.csv row 3: cpu_milli: '4k' is not an integer$"):
        convert(*load_trace(tmp_path / "csv", pod_file="mine.csv"), SPEC)


def test_converted_snapshot_plans_and_verifies() -> None:
    conv = _convert()
    snap = reading.read(conv.objects)
    plan = api.plan(snap, api.PlanOptions(time_limit=10))
    assert verify.verify(snap.facts, snap, plan) == []
    assert plan.status == "OPTIMAL"
    (workload,) = plan.workloads
    assert workload.name == "trace/trace-gang" and workload.satisfied and workload.priority == 1000
    assert plan.objective.satisfied_workloads == 1 and plan.objective.placed_pods == 3
    # g3 needs a whole G2 node: n4 (zone z1) has no room left for g1 and g4 beside it, so the gang
    # goes to z0, where n1 must first lose the fractional LS task p-frac (priority 500 < 1000)
    assert dict(workload.groups[0].domain) == {ZONE: "z0"}
    assert [(e.pod, e.node) for e in plan.evictions] == [("trace/p-frac", "n1")]
    bound = {b.pod: b.node for b in plan.bindings}
    assert bound["trace/g3"] == "n1" and set(bound) == {"trace/g1", "trace/g3", "trace/g4"}
    assert {bound["trace/g1"], bound["trace/g4"]} <= {"n1", "n2", "n3"}


def test_by_phase_takes_the_recorded_state_instead_of_a_time_cut() -> None:
    got = _convert(AlibabaSpec(by_phase=True, gang_pods=3, rack_size=2, racks_per_zone=2))
    # Running tasks by creation time, first fit over n0..n4; g3 (8 whole G2 GPUs) finds n1's
    # gpu-milli partly taken (p-frac 460, g1 1000, g2 500) and goes to n4
    assert got.running == (("p-cpu", "n0"), ("p-frac", "n1"), ("p-edge", "n0"), ("g1", "n1"), ("g2", "n1"),
                           ("g3", "n4"), ("p-late", "n0"), ("g5", "n1"))
    assert got.pending == ("p-pend", "g4") and got.at is None and got.unplaced_background == 0
    with pytest.raises(ValueError, match="by_phase and at exclude each other"):
        AlibabaSpec(by_phase=True, at=5)
