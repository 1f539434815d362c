"""Bad input: exit 2 and one message naming the object and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import cli, reading
from solver.core.errors import SnapshotInvalidError
from tests.builders import RACK, ZONE, composite, node, pod, pod_group


def _write(tmp_path: Path, objects: list[Any]) -> Path:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                "items": [o.build() if hasattr(o, "build") else o for o in objects]}))
    return path


def _with(builder: Any, path: str, value: Any) -> Any:
    obj = builder.build()
    cur = obj
    parts = path.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = value
    return obj


def _with_meta(builder: Any) -> Any:
    builder.obj["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    return builder


def _deep_chain(depth: int) -> list[Any]:
    out: list[Any] = [composite("c0", 1)]
    for i in range(1, depth):
        out.append(composite(f"c{i}", 1).parent(f"c{i - 1}"))
    out.append(pod_group("leaf", 1).parent(f"c{depth - 1}"))
    return out


BAD = [
    ("cycle-of-parents", [composite("a", 1).parent("b"), composite("b", 1).parent("a")],
     "CompositePodGroup/default/a: spec.parentCompositePodGroupName: cycle of parents"),
    ("tree-deeper-than-4", [node("n1"), *_deep_chain(4)],
     "spec.parentCompositePodGroupName: workload tree deeper than 4"),
    ("unparsable-quantity", [node("n1"), pod("p").request("cpu", "lots")],
     "Pod/default/p: spec.containers[0].resources.requests.cpu: unparsable quantity 'lots'"),
    ("unparsable-node-allocatable", [_with(node("n1"), "status.allocatable", {"memory": "12XB"})],
     "Node/n1: status.allocatable.memory: unparsable quantity '12XB'"),
    ("two-topology-keys", [pod_group("g", 1).topology(RACK).topology(ZONE)],
     "PodGroup/default/g: spec.schedulingConstraints.topology: at most one topology constraint per group"),
    ("min-count-not-positive", [_with(pod_group("g", 1), "spec.schedulingPolicy", {"gang": {"minCount": 0}})],
     "PodGroup/default/g: spec.schedulingPolicy.gang.minCount: must be a positive 32-bit integer, got 0"),
    ("both-basic-and-gang", [_with(pod_group("g", 1), "spec.schedulingPolicy", {"gang": {"minCount": 1}, "basic": {}})],
     "PodGroup/default/g: spec.schedulingPolicy: exactly one of basic and gang must be set"),
    ("unknown-priority-class", [node("n1"), _with(pod("p"), "spec.priorityClassName", "gold")],
     "Pod/default/p: spec.priorityClassName: PriorityClass 'gold' not found"),
    ("bad-cost-annotation", [node("n1"), pod("v").on("n1").cost("-3")],
     "Pod/default/v: metadata.annotations[gangplace.io/preemption-cost]: must be a number from 0 to 1000000000"),
    ("pod-on-missing-node", [node("n1"), pod("v").on("n9")],
     "Pod/default/v: spec.nodeName: Node n9 not found"),
    ("duplicate-object", [node("n1"), node("n1")], "Node/n1: metadata.name: duplicate object"),
    ("unknown-taint-effect", [node("n1").taint("k", effect="Sometimes")],
     "Node/n1: spec.taints[0].effect: unknown effect 'Sometimes'"),
    ("unknown-selector-operator", [node("n1"), pod("p").affinity("k", "Near", "x")],
     "Pod/default/p: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].operator: unknown operator 'Near'"),
    ("device-class-selector-does-not-compile",  # found when the plan compiles it, under its deadline
     [node("n1"), pod("p"), {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
       "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}],
     "DeviceClass/gpu: spec.selectors[0].cel.expression: CEL: syntax error"),
    ("object-without-kind", [{"metadata": {"name": "x"}}], "?/x: kind: missing"),
    # hostile values (issue 14): the wrong JSON type, numbers beyond what CP-SAT takes
    ("metadata-a-string", [node("n1"), _with(pod("p"), "metadata", "p")], "Pod/?: metadata.name: expected an object"),
    ("container-not-a-map", [node("n1"), _with(pod("p"), "spec.containers", ["c"])],
     "Pod/default/p: spec.containers[0]: expected a container, got str"),
    ("resources-a-number", [node("n1"), _with(pod("p"), "spec.containers", [{"name": "c", "resources": 5}])],
     "Pod/default/p: spec.containers[0].resources: expected an object, got int"),
    ("containers-not-a-list", [node("n1"), _with(pod("p"), "spec.containers", "c")],
     "Pod/default/p: spec.containers: expected a list"),
    ("annotations-a-string", [node("n1"), _with(pod("p"), "metadata.annotations", "x")],
     "Pod/default/p: metadata.annotations: expected Mapping, got str"),
    ("label-value-a-list", [node("n1").label("zone", ["a"])],  # type: ignore[arg-type]
     "Node/n1: metadata.labels[zone]: expected a string, got list"),
    ("taint-not-a-map", [_with(node("n1"), "spec.taints", ["NoSchedule"])],
     "Node/n1: spec.taints[0]: expected a taint, got str"),
    ("toleration-not-a-map", [node("n1"), _with(pod("p"), "spec.tolerations", [1])],
     "Pod/default/p: spec.tolerations[0]: expected a toleration, got int"),
    ("selector-values-not-a-list", [node("n1"), _with(pod("p"), "spec.affinity", {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "k", "operator": "In", "values": 5}]}]}}})],
     "nodeSelectorTerms[0].matchExpressions[0].values: expected a list"),
    ("quantity-beyond-the-bound", [node("n1"), pod("p").request("memory", "1e60")],
     "Pod/default/p: spec.containers[0].resources.requests.memory: quantity '1e60' is beyond 1125899906842624 base units"),
    ("cost-beyond-the-bound", [node("n1"), pod("p").on("n1").cost("1e300")],
     "must be a number from 0 to 1000000000, got '1e300'"),
    ("min-group-count-beyond-int32", [composite("c", 2**63)],
     "CompositePodGroup/default/c: spec.schedulingPolicy.gang.minGroupCount: must be a positive 32-bit integer, "
     "got 9223372036854775808"),
    ("priority-beyond-int32", [node("n1"), pod("p").priority(2**40)],
     "Pod/default/p: spec.priority: must be a 32-bit integer, got 1099511627776"),
    ("name-with-a-lone-surrogate", [node("\ud800")], "lone surrogate"),
    ("cel-nested-70-deep", [node("n1"), pod("p"), {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
                             "spec": {"selectors": [{"cel": {"expression": "(" * 70 + "true" + ")" * 70}}]}}],
     "DeviceClass/gpu: spec.selectors[0].cel.expression: CEL: nested too deeply"),
    ("cel-longer-than-10-kib", [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "g"},
                                 "spec": {"selectors": [{"cel": {"expression": "true && " * 1500 + "true"}}]}}],
     "CEL: longer than 10240 characters (resource.k8s.io CELSelectorExpressionMaxLength)"),
    ("cel-estimated-past-the-cost-limit", [node("n1"), pod("p"), {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                            "metadata": {"name": "g"}, "spec": {"selectors": [{"cel": {"expression": (
        "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "
        "[1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > 0)))))")}}]}}],
     "DeviceClass/g: spec.selectors[0].cel.expression: CEL: estimated cost 1455551 exceeds the limit 1000000 "
     "(resource.k8s.io CELSelectorExpressionMaxCost)"),
    ("cel-a-number", [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "g"},
                       "spec": {"selectors": [{"cel": 5}]}}],
     "DeviceClass/g: spec.selectors[0].cel.expression: missing"),
    # the inter-pod and admission fields (docs/fidelity.md)
    ("scheduling-gate-without-name", [node("n1"), _with(pod("p"), "spec.schedulingGates", [{"nam": "x"}])],
     "Pod/default/p: spec.schedulingGates[0].name: missing"),
    ("scheduling-gates-not-a-list", [node("n1"), _with(pod("p"), "spec.schedulingGates", "kueue")],
     "Pod/default/p: spec.schedulingGates: expected list, got str"),
    ("nominated-node-a-number", [node("n1"), _with(pod("p"), "status.nominatedNodeName", 5)],
     "Pod/default/p: status.nominatedNodeName: expected str, got int"),
    ("anti-affinity-term-without-key", [node("n1"), _with(pod("p"), "spec.affinity", {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}})],
     "Pod/default/p: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
     ".topologyKey: missing"),
    ("affinity-namespaces-a-string", [node("n1"), _with(pod("p"), "spec.affinity", {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "namespaces": "ml"}]}})],
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces: expected a list"),
    ("anti-affinity-not-an-object", [node("n1"), _with(pod("p"), "spec.affinity", {"podAntiAffinity": "all"})],
     "Pod/default/p: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
     "expected an object"),
    ("spread-max-skew-zero", [node("n1"), _with(pod("p"), "spec.topologySpreadConstraints", [
        {"maxSkew": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}])],
     "Pod/default/p: spec.topologySpreadConstraints[0].maxSkew: must be a positive 32-bit integer, got 0"),
    ("spread-unknown-when", [node("n1"), _with(pod("p"), "spec.topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "Sometimes"}])],
     "spec.topologySpreadConstraints[0].whenUnsatisfiable: must be DoNotSchedule or ScheduleAnyway"),
    ("spread-policy-unknown", [node("n1"), _with(pod("p"), "spec.topologySpreadConstraints", [
        {"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Maybe"}])],
     "spec.topologySpreadConstraints[0].nodeTaintsPolicy: must be Honor or Ignore, got 'Maybe'"),
    ("host-port-out-of-range", [node("n1"), _with(pod("p"), "spec.containers", [
        {"name": "c", "ports": [{"containerPort": 80, "hostPort": 70000}]}])],
     "Pod/default/p: spec.containers[0].ports[0].hostPort: must be a port number, got 70000"),
    ("host-port-a-float", [node("n1"), _with(pod("p"), "spec.containers", [
        {"name": "c", "ports": [{"containerPort": 80, "hostPort": 1e9}]}])],
     "Pod/default/p: spec.containers[0].ports[0].hostPort: must be a port number, got 1000000000.0"),
    ("ports-not-a-list", [node("n1"), _with(pod("p"), "spec.containers", [{"name": "c", "ports": "80"}])],
     "Pod/default/p: spec.containers[0].ports: expected a list"),
    # a number where Kubernetes has a string is refused, never read as its text
    ("toleration-key-a-number", [node("n1"), _with(pod("p"), "spec.tolerations", [{"key": 3, "operator": "Exists"}])],
     "Pod/default/p: spec.tolerations[0].key: expected a string, got int"),
    ("toleration-unknown-effect", [node("n1"), _with(pod("p"), "spec.tolerations", [{"key": "k", "effect": "Never"}])],
     "Pod/default/p: spec.tolerations[0].effect: unknown effect 'Never'"),
    ("node-taint-value-a-number", [_with(node("n1"), "spec.taints", [{"key": "k", "value": 1, "effect": "NoSchedule"}])],
     "Node/n1: spec.taints[0].value: expected a string, got int"),
    ("affinity-namespace-a-number", [node("n1"), _with(pod("p"), "spec.affinity", {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "namespaces": [7]}]}})],
     "requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]: expected a string, got int"),
    ("namespace-label-a-number", [node("n1"), {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": "ml", "labels": {"team": 5}}}],
     "Namespace/ml: metadata.labels"),
    ("device-toleration-key-a-number", [node("n1"), {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {}}, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu", "tolerations": [{"key": 3, "operator": "Exists"}]}}]}}}],
     "ResourceClaim/default/c: spec.devices.requests[0].exactly.tolerations[0].key: expected a string, got int"),
    ("reserved-for-resource-a-number", [node("n1"), {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": []}}, "status": {"reservedFor": [{"name": "p", "resource": 1}]}}],
     "ResourceClaim/default/c: status.reservedFor[0].resource: expected a string, got int"),
    ("selector-value-a-number", [node("n1"), _with(pod("p"), "spec.affinity", {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "k", "operator": "In", "values": [1]}]}]}}})],
     "matchExpressions[0].values[0]: expected a string, got int"),
    ("storage-class-annotation-a-number", [node("n1"), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default",
                     "annotations": {"volume.beta.kubernetes.io/storage-class": 5}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
     "PersistentVolumeClaim/default/data: metadata.annotations[volume.beta.kubernetes.io/storage-class]: "
     "expected a string, got int"),
    ("terminating-conditions-not-a-list", [node("n1"), _with(_with_meta(pod("p").on("n1")), "status.conditions", 3)],
     "Pod/default/p: status.conditions: expected list, got int"),
]


@pytest.mark.parametrize(("objects", "want_message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_exits_2_naming_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], objects: list[Any], want_message: str
) -> None:
    path = _write(tmp_path, objects)
    assert cli.main(["solve", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert want_message in err[0]


def test_invalid_yaml_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("kind: Node\nmetadata: [unclosed\n")
    assert cli.main(["solve", str(path)]) == 2
    assert "not valid YAML" in capsys.readouterr().err


@pytest.mark.parametrize("name, body, message", [
    ("deep.json", b"[" * 100000 + b"]" * 100000, "not valid JSON: nested too deeply"),
    ("deep.yaml", b"a:" + b" [" * 5000 + b"]" * 5000, "not valid YAML: nested too deeply"),
    ("bomb.yaml", b"a: &a [x,x,x,x,x,x,x,x,x]\n" + b"".join(
        f"{k}: &{k} [{', '.join(['*' + p] * 9)}]\n".encode() for p, k in zip("abcdefgh", "bcdefghi", strict=True)),
     "YAML aliases expand past 10000000 nodes"),
    ("latin1.json", '{"kind": "Node", "metadata": {"name": "n\u00e9"}}'.encode("latin-1"), "not UTF-8"),
    ("surrogate.json", b'{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "\\ud800"}}]}',
     "Node/?: metadata.name: a lone surrogate in the string"),
    ("surrogate-key.json", b'{"kind": "Pod", "metadata": {"name": "p", "labels": {"\\ud800": "x"}}}',
     "Pod/p: metadata.labels.? (the key): a lone surrogate in the string"),
    ("newline-name.json", b'{"kind": "Node", "metadata": {"name": "a\\nb"}, "status": {"allocatable": {"cpu": "x"}}}',
     "Node/a\\nb: status.allocatable.cpu"),
])
def test_hostile_files_exit_2_before_anything_is_built(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        name: str, body: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    assert cli.main(["solve", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("args, message", [
    (["--seed", "99999999999999999999"], "option seed: must be an integer from 0 to 2147483647"),
    (["--time-limit", "nan"], "option time_limit: must be a number from 0.001 to 604800, got nan"),
    (["--workers", "0"], "option workers: must be an integer from 1 to 64, got 0"),
])
def test_options_out_of_range_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                     message: str) -> None:
    path = _write(tmp_path, [node("n1"), pod("p")])
    assert cli.main(["solve", str(path), *args]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["serve", "--port", "70000"], "argument --port: 70000 is not a port (0-65535)"),
    (["serve", "--metrics-port", "-1"], "argument --metrics-port: -1 is not a port (0-65535)"),
    (["serve", "--health-port", "x"], "argument --health-port: x is not a port (0-65535)"),
    (["bench", "--upstream", "kube-scheduler", "--upstream-settle", "nan"],
     "argument --upstream-settle: nan is not a number of seconds (finite, >= 0)"),
    (["replan", "examples", "--upstream-settle", "-1"],
     "argument --upstream-settle: -1 is not a number of seconds (finite, >= 0)"),
    (["bench", "--upstream", "kube-scheduler", "--upstream-timeout", "inf"],
     "argument --upstream-timeout: inf is not a number of seconds (finite, >= 0)"),
])
def test_ports_and_settle_times_out_of_range_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                    message: str) -> None:
    # grpc would wrap 70000 to 4464 and bind there; a NaN settle time would never settle
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_an_escaped_exception_is_an_internal_error_never_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from solver import api

    def broken(*_: object, **__: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(api, "build_problem", broken)
    path = _write(tmp_path, [node("n1"), pod("p")])
    assert cli.main(["solve", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (f"gangplace: internal error, please report: KeyError: 'boom' (command solve, "
                           f"input {path})")


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["solve", str(tmp_path / "nope.json")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_unknown_workload_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [node("n1"), pod("p")])
    assert cli.main(["solve", str(path), "--workload", "default/other"]) == 2
    assert "no pending workload 'default/other'" in capsys.readouterr().err


def test_irrelevant_kinds_and_finished_pods_are_counted_not_dropped(tmp_path: Path) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"}}
    done = _with(pod("old").on("n1"), "status", {"phase": "Succeeded"})
    path = _write(tmp_path, [node("n1"), pod("p"), service, service | {"metadata": {"name": "t"}}, done])
    out = tmp_path / "plan.json"
    assert cli.main(["solve", str(path), "-o", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["stats"]["skippedKinds"] == {"Pod(finished)": 1, "Service": 2}
    assert plan["bindings"] == [{"pod": "default/p", "node": "n1"}]


def test_unsatisfiable_workload_is_a_plan_with_exit_0(tmp_path: Path) -> None:
    path = _write(tmp_path, [node("n1").cpu_m(1000), pod_group("g", 2),
                             pod("g-0").group("g").cpu_m(800), pod("g-1").group("g").cpu_m(800)])
    out = tmp_path / "plan.json"
    assert cli.main(["solve", str(path), "-o", str(out)]) == 0
    plan = json.loads(out.read_text())
    assert plan["workloads"][0]["satisfied"] is False
    assert plan["workloads"][0]["reason"]
    assert plan["bindings"] == []


def test_a_typed_api_list_gives_its_items_their_kind_and_api_version() -> None:
    # what GET /api/v1/nodes returns: a NodeList whose items carry neither
    bare = node("n1").build()
    bare.pop("kind")
    bare.pop("apiVersion")
    listed = {"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": [bare]}
    snap = reading.read([listed, pod("p").build()])
    assert [n.name for n in snap.nodes] == ["n1"] and [p.name for p in snap.pods] == ["p"]
    # an item of a plain List still needs its own kind
    with pytest.raises(SnapshotInvalidError, match="kind: missing"):
        reading.read([{"apiVersion": "v1", "kind": "List", "items": [bare]}])


def test_a_device_attribute_named_by_a_number_is_refused() -> None:
    """YAML (not JSON) can key a map by a number: a device attribute's name must be a string."""
    slice_ = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
              "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                       "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                       "devices": [{"name": "d", "attributes": {7: {"int": 1}}}]}}
    with pytest.raises(SnapshotInvalidError, match=r"ResourceSlice/s: spec\.devices\[0\]\.attributes\[7\]: "
                                                   "a name must be a string, got int"):
        reading.read([node("n1").build(), slice_])
