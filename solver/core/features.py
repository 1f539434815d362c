"""Scheduler feature gates that change what a plan may do, as ``--feature-gates`` spells them.

Only gates whose two settings give different plans are here; each default is
kube-scheduler 1.37's (pkg/features/kube_features.go). Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from solver.core.errors import InputError


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureGates:
    # PodGroupPreemptionPolicy (alpha in 1.37, off): on, a workload's preemptionPolicy is its root
    # group's and every pod must carry the same; off, the group's field is ignored, the pods
    # must agree among themselves and theirs is the workload's (validatePodGroup,
    # pkg/scheduler/schedule_one_podgroup.go; resolvePreemptionPolicy,
    # pkg/scheduler/framework/preemption/types.go)
    pod_group_preemption_policy: bool = False


GATE_NAMES = {"PodGroupPreemptionPolicy": "pod_group_preemption_policy"}


class FeatureGateError(InputError):
    def __init__(self, text: str, reason: str) -> None:
        self.text, self.reason = text, reason
        super().__init__(f"--feature-gates {text!r}: {reason}")


def parse_feature_gates(text: str) -> FeatureGates:
    """``"PodGroupPreemptionPolicy=true,Other=false"`` -> FeatureGates; an unknown gate or a
    value other than true/false is an error naming it."""
    values: dict[str, bool] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if name not in GATE_NAMES:
            known = ", ".join(sorted(GATE_NAMES))
            raise FeatureGateError(text, f"unknown feature gate {name!r} (known: {known})")
        if not sep or raw.strip().lower() not in ("true", "false"):
            raise FeatureGateError(text, f"{name}: expected =true or =false")
        values[GATE_NAMES[name]] = raw.strip().lower() == "true"
    return FeatureGates(**values)


def format_feature_gates(gates: FeatureGates) -> str:
    """The inverse of parse_feature_gates, every gate spelled out."""
    by_field = {f: n for n, f in GATE_NAMES.items()}
    return ",".join(f"{by_field[f.name]}={str(getattr(gates, f.name)).lower()}" for f in fields(gates))
