"""Scaffolding for testing one constraint family at a time.

An instance is a ``Problem`` built from Kubernetes objects through the real parser; a
model holds the ``PlacementVars`` of that problem, only the families a test names, and
a test-side demand written with ``PlacementVars``' public queries. ``solve`` runs
CP-SAT on it (one worker, a short limit): a model without an objective is OPTIMAL as
soon as a solution exists, INFEASIBLE when the families and the demand exclude every
solution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from solver import reading
from solver.model.vars import PlacementVars
from solver.problem.build import PdbPolicy, Problem, build_problem
from tests.builders import NS, admitted

Family = Callable[[Problem, PlacementVars], None]
Demand = Callable[[cp_model.CpModel, PlacementVars], None]

OPTIMAL = cp_model.OPTIMAL
INFEASIBLE = cp_model.INFEASIBLE
HOST = "kubernetes.io/hostname"


def problem_of(*objects: Any, pdb_policy: PdbPolicy = "strict") -> Problem:
    """Builders or dicts -> Problem; group pods get their root group's priority."""
    objs = admitted([o.build() if hasattr(o, "build") else o for o in objects])
    return build_problem(reading.read(objs), pdb_policy=pdb_policy)


def cls(problem: Problem, pod_name: str) -> int:
    """Index of the pod class holding pending pod ``pod_name``."""
    key = f"{NS}/{pod_name}"
    (found,) = [c.index for c in problem.classes if any(p.key == key for p in c.pods)]
    return found


def unit(problem: Problem, key: str) -> int:
    """Index of the victim unit ``key`` (a pod, or a disruptionMode: all group)."""
    (found,) = [u.index for u in problem.units if u.key == f"{NS}/{key}"]
    return found


def at(v: PlacementVars, c: int, node: str) -> cp_model.IntVar:
    """count[c, node], which must exist (the node is a candidate of the class)."""
    var = v.count(c, node)
    assert var is not None, f"class {c} has no count variable on {node}"
    return var


@dataclass(frozen=True)
class Outcome:
    status: int
    solver: cp_model.CpSolver = field(repr=False)
    vars: PlacementVars = field(repr=False)

    def value(self, expr: cp_model.LinearExprT) -> int:
        return int(self.solver.value(expr))

    def counts(self, c: int) -> dict[str, int]:
        """node -> pods of class ``c`` placed there, nodes with none left out."""
        values = {n: self.value(var) for n, var in self.vars.nodes_of(c).items()}
        return {n: k for n, k in values.items() if k}


def solve(problem: Problem, families: Iterable[Family], demand: Demand) -> Outcome:
    """A fresh model with ``families`` added in order, then ``demand``; solved."""
    model = cp_model.CpModel()
    v = PlacementVars(problem, model)
    for family in families:
        family(problem, v)
    demand(model, v)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 5.0
    return Outcome(solver.solve(model), solver, v)


# ---- Kubernetes fields tests/builders.py has no builder for
# ---------------------------
def term(key: str, **labels: str) -> dict[str, Any]:
    """A required pod (anti-)affinity term over ``key`` selecting ``labels``."""
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def anti(builder: Any, *terms: dict[str, Any]) -> Any:
    aff = (
        builder.obj["spec"].setdefault("affinity", {}).setdefault("podAntiAffinity", {})
    )
    aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).extend(terms)
    return builder


def affine(builder: Any, *terms: dict[str, Any]) -> Any:
    aff = builder.obj["spec"].setdefault("affinity", {}).setdefault("podAffinity", {})
    aff.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).extend(terms)
    return builder


def spread(builder: Any, key: str, max_skew: int = 1, **labels: str) -> Any:
    """A DoNotSchedule topology spread constraint over ``key`` counting ``labels``."""
    builder.obj["spec"].setdefault("topologySpreadConstraints", []).append(
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": labels},
        }
    )
    return builder


def host_port(builder: Any, port: int) -> Any:
    builder.obj["spec"]["containers"][0]["ports"] = [
        {"containerPort": port, "hostPort": port}
    ]
    return builder
