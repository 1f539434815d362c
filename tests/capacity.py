"""The capacity invariant every adapter test checks: at no moment may the pods bound to a node
request more than the node's allocatable.

A pod counts on the node of its ``spec.nodeName`` until it is gone from the API, as the kubelet
holds its room: a pod terminating (``deletionTimestamp`` set, not yet removed) still counts;
a pod that ended (phase Succeeded or Failed) does not. Its requests are the effective ones
(``solver.verify.read.requests``, the verifier's own reading of resourcehelper.PodRequests:
max(containers and sidecars, each init container's moment), pod-level requests, overhead and
one ``pods``). Only the resources the node lists in ``status.allocatable`` are compared: a
resource it does not list (an extended resource DRA serves) is not NodeResourcesFit's.

Checked by the API server double on every change a request makes (tests/apiserver.py,
``ApiServerDouble.capacity_violations``) and on the real API server by a watch of pods
(tests/controlplane/conftest.py, ``CapacityWatch``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from solver.verify.read import requests, units

Obj = dict[str, Any]

__all__ = ["Overcommit", "counted", "overcommitted"]


@dataclass(frozen=True, slots=True)
class Overcommit:
    """One moment a node held more than its allocatable: what, how much, and what made it so."""

    node: str
    resource: str
    requested: int  # millicores for cpu, else the unit value
    allocatable: int
    pods: tuple[str, ...]  # "ns/name" of the pods counted, terminating ones marked " (terminating)"
    cause: str  # the request ("POST /api/v1/namespaces/default/pods/p/binding") or the watch event

    def __str__(self) -> str:
        return (f"node {self.node}: {self.resource} {self.requested} requested > {self.allocatable} allocatable "
                f"after {self.cause}; pods {', '.join(self.pods)}")


def counted(pod: Obj, node: str) -> bool:
    """``pod`` holds room on ``node``: bound there and not ended (terminating still holds it)."""
    return (pod.get("spec") or {}).get("nodeName") == node and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def overcommitted(node: Obj, pods: Iterable[Obj], cause: str) -> list[Overcommit]:
    """Every resource of ``node``'s allocatable that the pods bound to it (of ``pods``) exceed."""
    name = node["metadata"]["name"]
    allocatable = {str(k): units(str(k), v) for k, v in ((node.get("status") or {}).get("allocatable") or {}).items()}
    total: dict[str, int] = {}
    held: list[str] = []
    for p in pods:
        if not counted(p, name):
            continue
        try:
            asked = requests(p.get("spec") or {})
        except (ValueError, TypeError, AttributeError, ArithmeticError):
            continue  # a quantity no API server would have admitted: a test's bad object, not room held
        meta = p["metadata"]
        held.append(f"{meta.get('namespace', '')}/{meta['name']}" + (" (terminating)" if meta.get("deletionTimestamp")
                                                                    else ""))
        for k, v in asked.items():
            total[k] = total.get(k, 0) + v
    return [Overcommit(name, k, total[k], allocatable[k], tuple(sorted(held)), cause)
            for k in sorted(allocatable) if total.get(k, 0) > allocatable[k]]
