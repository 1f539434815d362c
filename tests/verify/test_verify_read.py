"""The verifier's own reading of the objects (solver/verify/read.py), checked against upstream's
behaviour (the expected values come from upstream's tests and code named at each case, never
from gangplace's parser), and shown to catch a plan made by a parser that misreads."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from solver import reading, verify
from solver.kube import pods as kube_pods
from solver.verify import read
from tests.builders import node, pod
from tests.verify.test_verify_dra import plan as hand_plan

# apimachinery pkg/api/resource/quantity_test.go TestQuantityParse (value = mantissa x 10^scale)
PARSED = {
    "0": Fraction(0), "0Ki": Fraction(0), "1Ki": Fraction(1024), "7Mi": Fraction(7 * 2 ** 20),
    "3Ei": Fraction(3 * 2 ** 60), "5n": Fraction(5, 10 ** 9), "3m": Fraction(3, 1000), "50k": Fraction(50000),
    "1E": Fraction(10 ** 18), "1E-3": Fraction(1, 1000), "1e3": Fraction(1000), "1.3E+6": Fraction(1300000),
    "100.035k": Fraction(100035), "0.0005k": Fraction(1, 2), "0.5e-2": Fraction(5, 1000),
    "1.01E": Fraction(101 * 10 ** 16), "5.": Fraction(5), ".5": Fraction(1, 2), "-3m": Fraction(-3, 1000),
}
# the same file, the strings ParseQuantity refuses
INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ", ".", ""]


@pytest.mark.parametrize("text", sorted(PARSED))
def test_quantities_parse_as_upstream(text: str) -> None:
    assert read.amount(text) == PARSED[text]


@pytest.mark.parametrize("text", INVALID)
def test_quantities_upstream_refuses_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        read.amount(text)


def test_units_round_up_as_milli_value_and_value() -> None:
    # Quantity.MilliValue for cpu and Value otherwise, both rounding up (quantity.go ScaledValue)
    assert read.units("cpu", "100n") == 1
    assert read.units("cpu", "0.1") == 100
    assert read.units("memory", "1m") == 1
    assert read.units("memory", "1.5Ki") == 1536
    assert read.units("memory", 2.5) == 3


def _spec(**spec: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}], **spec}


def test_pod_requests_follow_component_helpers() -> None:
    # the sidecar KEP's example (KEP-753 "Resources calculation for scheduling"): containers 500m
    # and 250m; a sidecar 100m; then a regular init container 1000m -> max(750 + 100, 1000 + 100)
    spec = {"containers": [{"resources": {"requests": {"cpu": "500m"}}}, {"resources": {"requests": {"cpu": "250m"}}}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}},
                               {"resources": {"requests": {"cpu": "1"}}}]}
    assert read.requests(spec) == {"cpu": 1100, "pods": 1}
    # a limit stands in for a missing request (SetDefaults_Pod); the overhead comes on top
    assert read.requests({"containers": [{"resources": {"limits": {"memory": "1Gi"}}}],
                          "overhead": {"memory": "1Mi"}}) == {"memory": 2 ** 30 + 2 ** 20, "pods": 1}
    # pod-level requests replace cpu, memory and hugepages only (applyPodLevelResources)
    assert read.requests(_spec(resources={"requests": {"cpu": "3", "example.com/x": "2"}})) == {"cpu": 3000, "pods": 1}
    # defaultPodRequests: a pod-level limit becomes the request; hugepages are not overcommitted,
    # so a container's hugepages request does not stop the pod-level limit from standing in
    huge = {"containers": [{"resources": {"requests": {"hugepages-2Mi": "2Mi"}, "limits": {"hugepages-2Mi": "2Mi"}}}],
            "resources": {"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}
    assert read.requests(huge) == {"hugepages-2Mi": 4 * 2 ** 20, "memory": 2 ** 30, "pods": 1}


def _node(name: str = "n1", **labels: str) -> read.NodeFacts:
    return read.NodeFacts(name=name, labels=labels, allocatable={}, taints=(), features=frozenset())


@pytest.mark.parametrize(("value", "matches"), [("17", True), ("1_7", False), ("+17", True), (" 17", False),
                                                 (str(2 ** 63), False), ("16", False), ("0x11", False)])
def test_gt_reads_the_label_as_strconv_parseint(value: str, matches: bool) -> None:
    # labels.Requirement.Matches: strconv.ParseInt(value, 10, 64); a failure never matches
    assert read.requirement_holds(("size", "Gt", ("16",)), {"size": value}) is matches


def test_requirements_and_terms_as_upstream() -> None:
    assert read.requirement_holds(("a", "NotIn", ("x",)), {}) is True  # an absent key is not in any set
    assert read.requirement_holds(("a", "In", ("x",)), {}) is False
    assert read.term_holds(((), ()), _node()) is False  # an empty term matches no node
    assert read.term_holds(((), (("metadata.name", "In", ("n1",)),)), _node()) is True
    assert read.term_holds(((), (("metadata.name", "In", ("n2",)),)), _node()) is False


def test_selectors_null_matches_nothing_empty_matches_everything() -> None:
    # metav1.LabelSelectorAsSelector: nil -> labels.Nothing(), {} -> labels.Everything()
    assert read.selector(None) is None
    empty = read.selector({})
    assert empty is not None and empty.matches({}) and empty.matches({"a": "b"})
    keyed = read.selector({"matchLabels": {"app": "db"}}, {"app": "db", "rev": "2"}, match_keys=("rev",))
    assert keyed is not None and keyed.matches({"app": "db", "rev": "2"}) and not keyed.matches({"app": "db"})


def test_tolerations_as_upstream() -> None:
    taint = ("gpu", "a100", "NoSchedule")
    assert read.tolerated(("gpu", "Exists", "", ""), taint)
    assert read.tolerated(("", "Exists", "", ""), taint)  # an empty key with Exists tolerates every taint
    assert read.tolerated(("gpu", "Equal", "a100", "NoSchedule"), taint)
    assert not read.tolerated(("gpu", "Equal", "h100", ""), taint)
    assert not read.tolerated(("gpu", "Exists", "", "NoExecute"), taint)


def test_host_network_ports_and_features() -> None:
    spec = {"hostNetwork": True, "hostUsers": False,
            "containers": [{"ports": [{"containerPort": 8080}],
                            "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]}]}
    facts = read.read([{"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}])
    pod_facts = facts.pods["default/p"]
    assert pod_facts.host_ports == (("TCP", "0.0.0.0", 8080),)
    assert pod_facts.features == {"UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"}


def test_the_verifier_catches_a_plan_from_a_parser_that_misreads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put a parser bug back (pod-level requests ignored) and let the model plan with it: the
    verifier, reading the objects itself, refuses the binding the bug allowed."""
    objs = [node("n1").cpu_m(2000).build(), pod("p").cpu_m(500).build()]
    objs[1]["spec"]["resources"] = {"requests": {"cpu": "3"}}
    good = reading.read(objs)
    assert good.pods[0].requests["cpu"] == 3000
    monkeypatch.setattr(kube_pods, "_pod_level_requests", lambda obj, spec, containers: {})
    misread = reading.read(objs)
    assert misread.pods[0].requests["cpu"] == 500
    binding = hand_plan(misread, {"default/p": "n1"})
    assert verify.verify(good.facts, good, binding) == verify.verify(misread.facts, misread, binding)
    assert [(v.rule, v.subject) for v in verify.verify(misread.facts, misread, binding)] == [("capacity", "n1/cpu")]
