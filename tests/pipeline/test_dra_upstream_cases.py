"""DRA cases where gangplace once disagreed with the real kube-scheduler 1.37.2, found by a
differential fuzz run (tests/data/dra_upstream/, each a snapshot the real API server takes;
tests/controlplane/test_refusals_vs_upstream.py replays them on the real scheduler). Each
asserts the outcome the real scheduler reached, from the model and the baseline, verified."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from solver import api, reading, verify

CASES_DIR = Path(__file__).resolve().parents[1] / "data" / "dra_upstream"

# file -> (bindings, the devices of p's allocation with their consumedCapacity); what the real
# scheduler did, and the upstream rule (dynamic-resource-allocation structured/internal/incubating)
CASES: dict[str, tuple[dict[str, str], list[tuple[str, tuple[tuple[str, str], ...]]]]] = {
    # allocateOne returns a selector's runtime error from the first firstAvailable entry: the
    # second entry, which any device meets, is never tried
    "cel-error-first-entry": ({}, []),
    # isSelectable runs before allocateDevice's taint check: the tainted device's selector error aborts
    "cel-error-on-tainted-device": ({}, []),
    # All must take every selected device; the tainted one cannot be taken
    "all-mode-tainted-device": ({}, []),
    # validateDeviceRequest leaves devices too small for the capacity request out of All's set
    "all-mode-capacity": ({"default/p": "n1"}, [("gpu-1", ())]),
    # a validRange step worked out in whole units (DRAFractionalCapacityRange off): 400m uses 1
    "capacity-step-whole-units": ({"default/p": "n1"}, [("gpu-0", (("cores", "1"),))]),
    "capacity-step-whole-units-two-claims": ({}, []),
    # the device without the attribute is on a node too small for the pod: NodeResourcesFit
    # refuses it before DynamicResources, so the allocator never meets the error
    "cel-error-on-a-node-too-small": ({"default/p": "n1"}, [("gpu-0", ())]),
    # a pending pod naming the claim a running pod holds: bound beside it, nothing allocated anew
    "pending-pod-names-a-held-claim": ({"default/p": "n1"}, []),
    # a PodGroup's All claim is allocated once, on one sharer's node (n0: only the network link),
    # and the other sharer is pinned to that allocation on n1, whose own All set would add its
    # GPUs (the real scheduler binds both when it takes g-0's node first; created in the other
    # order it binds neither)
    "shared-all-claim-allocated-on-one-sharers-node": ({"default/g-0": "n0", "default/g-1": "n1"},
                                                       [("link-0", ())]),
    # one ResourceClaim two pending pods name (entries of different names): allocated once, for
    # the first pod, and the second pinned to it (once refused as not modelled)
    "claim-named-by-two-pending-pods": ({"default/a": "n1", "default/b": "n1"}, [("gpu-0", ())]),
    # adminAccess (DRAAdminAccess, GA): allocateDevice skips the in-use check, so two monitoring
    # pods take the GPU a running pod holds, each result marked adminAccess (once planned as
    # ordinary requests: neither placed)
    "admin-access-beside-the-holder": ({"ops/m1": "n1", "ops/m2": "n1"}, [("gpu-0", ()), ("gpu-0", ())]),
    # an adminAccess result is "not considered as allocated" (allocateddevices.go): the GPU is free
    "admin-access-result-holds-nothing": ({"ops/p": "n1"}, [("gpu-0", ())]),
    # allocateOne skips a device in use before its selectors run: the selector's error on the
    # GPU r holds (no plan frees it) is never met, and p takes the other one (once: aborted)
    "cel-error-on-a-device-in-use": ({"default/p": "n1"}, [("gpu-1", ())]),
}


def load(name: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = json.loads((CASES_DIR / f"{name}.json").read_text())
    return docs


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("baseline", [False, True], ids=["model", "baseline"])
def test_gangplace_does_what_the_real_scheduler_did(name: str, baseline: bool) -> None:
    snap = reading.read(load(name))
    plan = api.plan(snap, api.PlanOptions(time_limit=10, baseline_only=baseline))
    assert verify.verify(snap.facts, snap, plan) == []
    bindings, devices = CASES[name]
    assert {b.pod: b.node for b in plan.bindings} == bindings
    assert [(d.device, d.consumed) for a in plan.device_allocations for d in a.devices] == devices


@pytest.mark.parametrize("name", ["cel-error-first-entry", "cel-error-on-tainted-device"])
def test_a_pod_the_allocator_aborts_for_says_which_device_broke_which_selector(name: str) -> None:
    """Upstream's Filter error names the selector and the device (allocateDevice's
    ``selector #%d on device %s: CEL runtime error``); the plan's reason does too."""
    snap = reading.read(load(name))
    plan = api.plan(snap, api.PlanOptions(time_limit=10))
    assert [w.reason for w in plan.workloads] == [
        'running "DynamicResources" filter plugin: claim e0: selector #0 on device gpu.example.com/n1/gpu-0: '
        "CEL runtime error: device gpu.example.com/n1/gpu-0: no such member in mapping: 'mem'"]
