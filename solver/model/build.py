"""build_model(problem) -> BuiltModel: a pure function, no solving, no I/O.

The one model builder behind every entry point (CLI, gRPC service, adapter,
benchmarks).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ortools.sat.python import cp_model

from solver.core.errors import ModelTooLargeError
from solver.core.stopping import checkpoint
from solver.model import objective
from solver.model.bounds import floors
from solver.model.constraints import capacity, devices, gang, interpod, pdb, preemption, symmetry, topology, volumes
from solver.model.vars import PlacementVars
from solver.problem.build import Problem

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BuiltModel:
    problem: Problem
    model: cp_model.CpModel
    vars: PlacementVars
    stages: tuple[objective.Stage, ...]
    build_seconds: float
    pdb_floor: floors.PdbFloor | None = None  # proven floor on tier 3 when every pod is placed
    # floors.cost_floor(problem, violations) by violations, filled as they are computed
    cost_floors: dict[int, floors.CostFloor | None] = dataclasses.field(default_factory=dict)

    @property
    def variables(self) -> int:
        return len(self.model.proto.variables)

    @property
    def constraints(self) -> int:
        return len(self.model.proto.constraints)


def constrain(problem: Problem, vars: PlacementVars) -> None:
    """Every constraint family, in the order their results flow (constraints/__init__.py);
    a stop is seen between families."""
    checkpoint("the model (devices)")
    devices.add(problem, vars)
    checkpoint("the model (interpod)")
    conflicts = interpod.add(problem, vars)
    checkpoint("the model (preemption)")
    preemption.add(problem, vars, conflicts)
    for name, family in (("topology", topology.add), ("capacity", capacity.add), ("volumes", volumes.add),
                         ("gang", gang.add), ("pdb", pdb.add), ("symmetry", symmetry.add)):
        checkpoint(f"the model ({name})")
        family(problem, vars)


# build_model's default: compute the floor
_COMPUTE = floors.PdbFloor(evictions=-1, violations=-1, evicted_pods=-1, plan=None)


def build_model(problem: Problem, *, max_variables: int | None = None,
                pdb_floor: floors.PdbFloor | None = _COMPUTE,
                cost_floors: Mapping[int, floors.CostFloor | None] | None = None) -> BuiltModel:
    """The model; ``pdb_floor`` and ``cost_floors`` (by violations) when the caller has them
    already (``floors.pdb_floor(problem)``, ``floors.cost_floor(problem, violations)``)."""
    start = time.perf_counter()
    planned = sum(len(c) for c in problem.candidates)
    if max_variables is not None and planned > max_variables:
        raise ModelTooLargeError(planned, max_variables)
    model = cp_model.CpModel()
    vars = PlacementVars(problem, model)
    constrain(problem, vars)
    built = BuiltModel(
        problem=problem,
        model=model,
        vars=vars,
        stages=tuple(objective.stages(problem, vars)),
        build_seconds=0.0,
        pdb_floor=None if not vars.all_pdb_violations() else
        floors.pdb_floor(problem) if pdb_floor is _COMPUTE else pdb_floor,
        cost_floors=dict(cost_floors or {}),
    )
    built = dataclasses.replace(built, build_seconds=time.perf_counter() - start)
    _LOGGER.debug("built model: %d variables, %d constraints", built.variables, built.constraints)
    return built
