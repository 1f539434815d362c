"""The expected pods (``PlanOptions.expected``, docs/fragmentation.md) from a document, and back.

A document is a list (or ``{expectedPods: [...]}``) of entries::

    - name: half-gpu            # optional; messages name it (else expected[i])
      weight: 30                # its share of arrivals, relative to the others' (> 0)
      requests: {cpu: "4", memory: 8Gi}
      device:                   # optional: one device request, as a claim's ``exactly``
        deviceClassName: gpu
        count: 1
        selectors: [{cel: {expression: 'device.attributes["gpu.example.com"].model == "V100"'}}]
        capacity: {requests: {memory: 8Gi}}

The device class is checked against the snapshot when the plan reads the devices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from solver.core import snapshot as s
from solver.filters import consumable
from solver.kube.dra import sub_request
from solver.kube.objects import Obj, invalid, quantity

KIND = "ExpectedPod"
FIELDS = {"name", "weight", "requests", "device"}
DEVICE_FIELDS = {"deviceClassName", "count", "selectors", "capacity", "tolerations", "allocationMode"}


def expected_pods(docs: Sequence[Any], source: str = "expected pods") -> tuple[s.ExpectedPod, ...]:
    """The entries of ``docs`` (the documents of one file or message), in order."""
    entries: list[Any] = []
    for doc in docs:
        if isinstance(doc, Mapping) and "expectedPods" in doc:
            doc = doc["expectedPods"]
        if doc is None:
            continue
        if not isinstance(doc, list):
            raise invalid({"kind": KIND}, source, "expected a list of expected pods (or {expectedPods: [...]})")
        entries.extend(doc)
    return tuple(_entry(i, raw) for i, raw in enumerate(entries))


def _entry(i: int, raw: Any) -> s.ExpectedPod:
    given = raw.get("name") if isinstance(raw, Mapping) else None
    name = given if isinstance(given, str) and given else f"expected[{i}]"
    obj: Obj = {"kind": KIND, "metadata": {"name": name}}
    if not isinstance(raw, Mapping):
        raise invalid(obj, "", "expected a map with weight, requests and device")
    for key in raw:
        if key not in FIELDS:
            raise invalid(obj, str(key)[:64], f"unknown field (known: {', '.join(sorted(FIELDS))})")
    weight = raw.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) \
            or not 0 < weight <= 1e9:
        raise invalid(obj, "weight", f"must be a number above 0 and at most 1e9, got {str(weight)[:40]!r}")
    requests = raw.get("requests") or {}
    if not isinstance(requests, Mapping):
        raise invalid(obj, "requests", "expected a map of quantities")
    amounts = tuple(sorted((str(r), quantity(obj, f"requests[{r}]", str(r), q)) for r, q in requests.items()))
    device = raw.get("device")
    return s.ExpectedPod(name=name, weight=float(weight), requests=tuple((r, a) for r, a in amounts if a > 0),
                         device=None if device is None else _device(obj, device))


def _device(obj: Obj, raw: Any) -> s.SubRequest:
    if not isinstance(raw, Mapping):
        raise invalid(obj, "device", "expected a device request")
    for key in raw:
        if key not in DEVICE_FIELDS:
            raise invalid(obj, f"device.{str(key)[:64]}", f"unknown field (known: {', '.join(sorted(DEVICE_FIELDS))})")
    if (raw.get("allocationMode") or "ExactCount") != "ExactCount":
        raise invalid(obj, "device.allocationMode", "only ExactCount is modelled for an expected pod")
    return sub_request(obj, "device", raw, "device", None)


def document(pods: Sequence[s.ExpectedPod]) -> list[dict[str, Any]]:
    """``pods`` as a document ``expected_pods`` reads back to the same values."""
    out = []
    for pod in pods:
        entry: dict[str, Any] = {"name": pod.name, "weight": pod.weight,
                                 "requests": {r: f"{a}m" if r == "cpu" else str(a) for r, a in pod.requests}}
        if (d := pod.device) is not None:
            dev: dict[str, Any] = {"deviceClassName": d.device_class, "count": d.count}
            if d.selectors:
                dev["selectors"] = [{"cel": {"expression": e}} for e in d.selectors]
            if d.capacity:
                dev["capacity"] = {"requests": {n: consumable.text(m) for n, m in d.capacity}}
            if d.tolerations:
                dev["tolerations"] = [{"key": t.key, "operator": t.operator, "value": t.value, "effect": t.effect}
                                      for t in d.tolerations]
            entry["device"] = dev
        out.append(entry)
    return out
