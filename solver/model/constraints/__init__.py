"""Constraint families of the placement model, one module each.

``DEFAULT_CONSTRAINTS`` lists them in the order the builder applies them;
nothing else wires them together. Each family exposes ``add(problem, vars)``.
``devices`` comes first: it creates the allocation variables and the eviction
variables of device holders, which ``preemption`` then gives necessity rows; so does
``interpod`` for the running pods in conflict with a class (and the reasons their
evictions are necessary).
Eviction variables are created by ``preemption`` before ``topology``,
``capacity`` and ``pdb`` read them; topology pruning happens earlier, in
``problem``.
"""

from __future__ import annotations

from collections.abc import Callable

from solver.model.constraints import capacity, devices, gang, interpod, pdb, preemption, symmetry, topology, volumes
from solver.model.vars import PlacementVars
from solver.problem.build import Problem

Family = Callable[[Problem, PlacementVars], None]

DEFAULT_CONSTRAINTS: tuple[tuple[str, Family], ...] = (
    ("devices", devices.add),
    ("interpod", interpod.add),
    ("preemption", preemption.add),
    ("topology", topology.add),
    ("capacity", capacity.add),
    ("volumes", volumes.add),
    ("gang", gang.add),
    ("pdb", pdb.add),
    ("symmetry", symmetry.add),
)

__all__ = ["DEFAULT_CONSTRAINTS", "Family"]
