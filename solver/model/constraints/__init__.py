"""Constraint families of the placement model, one module each, independent of one another
(an import-linter contract): each exposes ``add(problem, vars)`` and returns what a later
family takes, if anything. ``solver.model.build.constrain`` applies them, in this order:

- ``devices`` creates the allocation variables and the eviction variables of device holders;
- ``interpod`` returns the evictions its conflicts make necessary (``vars.Conflicts``),
  which ``preemption`` takes;
- ``preemption`` creates every other eviction variable, with its necessity rows, before
  ``topology``, ``capacity``, ``volumes``, ``gang`` and ``pdb`` read them;
- ``symmetry`` breaks ties last.

Topology pruning happens earlier, in ``solver.problem``.
"""
